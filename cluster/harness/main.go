// Command harness runs a real control plane (etcd, kube-apiserver,
// kube-controller-manager, built by cluster/build) with the policy as a
// validating webhook, does with kubectl what a cluster does every day, and
// holds the policy and `policy-runner check` to what the cluster sent and
// made. It writes every distinct AdmissionReview the webhook received to
// test_data/cluster/recorded/<release>/, which the Rust tests replay without
// Go. Run it through cluster/run.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// policy is one ClusterAdmissionPolicy of the README's recommended set, in
// protect mode: a webhook of its own, as Kubewarden registers one a policy.
type policy struct {
	id       string
	settings string
}

// The README's recommended settings for workloads, as tests/cluster.rs
// judges the hand-written requests with them.
var policies = []policy{
	{"owner-required", `{"criteria":"containsAllOf","values":["example.com/owner"]}`},
	{"allowlist", `{"criteria":"doesNotContainOtherThan","values":["example.com/*"]}`},
	{"denylist", `{"criteria":"doesNotContainAnyOf","values":["example.com/debug","example.com/skip-*"]}`},
}

type harness struct {
	root       string // the repository
	bin        string // the control plane's binaries
	release    string // "1.37"
	gitVersion string // "v1.37.2"
	runner     string // policy-runner
	module     string // policy.wasm
	work       string // this run's files, removed at the end unless kept
	record     bool   // write test_data/cluster/recorded/<release>/
	compare    bool   // hold the committed recordings to this run instead
	external   string // a webhook's base URL instead of policy-runner serve
	externalCA string

	processes []*process
	ca        *authority
	caFile    string
	server    string
	admin     string            // the admin's kubeconfig
	webhooks  map[string]string // policy id → its recording file
	// policy id → its webhook's base URL, which answers /validate/<id>
	// and /audit/<id>
	webhookBase map[string]string
	registered  time.Time // when the webhooks were registered
	audits      map[string]*audited
	failures    []string
}

func main() {
	h := &harness{}
	var keep bool
	flag.StringVar(&h.root, "root", "..", "the repository's root")
	flag.StringVar(&h.bin, "bin", "", "the directory of etcd, kube-apiserver, kube-controller-manager and kubectl")
	flag.StringVar(&h.runner, "runner", "", "policy-runner")
	flag.StringVar(&h.module, "module", "", "the policy module")
	flag.BoolVar(&h.record, "record", true, "write the distinct reviews to test_data/cluster/recorded/<release>/")
	flag.BoolVar(&h.compare, "compare", false, "write nothing: fail unless this run's distinct reviews are those recorded in test_data/cluster/recorded/<release>/ (CI)")
	flag.StringVar(&h.external, "webhook-url", "", "a webhook (policy-server) to use instead of policy-runner serve: its base URL; each policy is <url>/validate/<policy id>")
	flag.StringVar(&h.externalCA, "webhook-ca", "", "the PEM file of the CA that signed --webhook-url's certificate")
	flag.BoolVar(&keep, "keep", false, "keep the run's directory (logs, recordings)")
	flag.Parse()
	if h.bin == "" || (h.external == "" && (h.runner == "" || h.module == "")) {
		fmt.Fprintln(os.Stderr, "harness: give --bin, and --runner with --module (or --webhook-url with --webhook-ca)")
		os.Exit(2)
	}
	if (h.external == "") != (h.externalCA == "") {
		fmt.Fprintln(os.Stderr, "harness: --webhook-url and --webhook-ca go together")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "annotations-policy-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h.work = work

	// Whatever happens, the control plane stops.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		h.stop()
		os.Exit(130)
	}()
	code := h.run()
	h.stop()
	if keep || code != 0 {
		fmt.Printf("the run's files (logs, recordings): %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	os.Exit(code)
}

func (h *harness) run() int {
	started := time.Now()
	// A fatal step's failure leaves nothing for the later ones to see.
	steps := []struct {
		name  string
		do    func() error
		fatal bool
	}{
		{"start the control plane", h.startControlPlane, true},
		{"read the release", h.readRelease, true},
		{"create the nodes and namespaces", h.prepare, true},
		{"create objects before the policy", h.beforeThePolicy, false},
		{"register the policy's webhooks", h.registerWebhooks, true},
		{"apply a workload of each kind", h.applyWorkloads, false},
		{"hold check's predictions to what the controllers made", h.predictions, false},
		{"do what a cluster does every day", h.everyDay, false},
		{"refuse what the policy must refuse", h.refusals, false},
		{"find every object the controllers must make", h.derivedObjects, false},
		{"find no failed creation", h.noFailedCreate, false},
		{"audit what the cluster holds, as the audit scanner does", h.audit, false},
		{"write the recordings", h.writeRecordings, false},
	}
	for _, step := range steps {
		fmt.Printf("== %s\n", step.name)
		if err := step.do(); err != nil {
			h.fail("%s: %v", step.name, err)
			if step.fatal {
				break
			}
		}
	}
	fmt.Printf("== %d failure(s) in %.0f s\n", len(h.failures), time.Since(started).Seconds())
	for _, f := range h.failures {
		fmt.Printf("FAIL %s\n", f)
	}
	if len(h.failures) > 0 {
		return 1
	}
	return 0
}

func (h *harness) fail(format string, args ...any) {
	message := fmt.Sprintf(format, args...)
	fmt.Printf("   FAIL %s\n", message)
	h.failures = append(h.failures, message)
}

func (h *harness) stop() {
	for i := len(h.processes) - 1; i >= 0; i-- {
		h.processes[i].stop()
	}
	h.processes = nil
}

func (h *harness) binary(name string) string {
	return filepath.Join(h.bin, name)
}

func (h *harness) readRelease() error {
	out, err := h.kubectl("version", "-o", "json")
	if err != nil {
		return err
	}
	var version struct {
		Server struct {
			GitVersion string `json:"gitVersion"`
			Major      string `json:"major"`
			Minor      string `json:"minor"`
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &version); err != nil {
		return fmt.Errorf("kubectl version: %w", err)
	}
	h.gitVersion = version.Server.GitVersion
	h.release = version.Server.Major + "." + strings.TrimSuffix(version.Server.Minor, "+")
	fmt.Printf("   kube-apiserver %s\n", version.Server.GitVersion)
	return nil
}

// kubectl runs the real kubectl as the cluster's administrator and returns
// what it printed.
func (h *harness) kubectl(args ...string) (string, error) {
	return h.kubectlIn("", args...)
}

func (h *harness) kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(h.binary("kubectl"), append([]string{"--kubeconfig=" + h.admin}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// must runs kubectl and reports a failure when it fails.
func (h *harness) must(args ...string) string {
	out, err := h.kubectl(args...)
	fmt.Printf("   kubectl %s\n", strings.Join(args, " "))
	if err != nil {
		h.fail("%v", err)
	}
	return out
}

// getJSON reads objects as the API server stores them.
func (h *harness) getJSON(args ...string) (map[string]any, error) {
	out, err := h.kubectl(append(args, "-o", "json")...)
	if err != nil {
		return nil, err
	}
	var value map[string]any
	return value, json.Unmarshal([]byte(out), &value)
}

// readYAML reads one YAML file of the repository into JSON values.
func (h *harness) readYAML(path string, into any) error {
	text, err := os.ReadFile(filepath.Join(h.root, path))
	if err != nil {
		return err
	}
	return yaml.Unmarshal(text, into)
}

// eventually polls until check passes or the time is up.
func eventually(limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}
