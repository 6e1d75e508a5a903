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
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// policy is one policy in protect mode: a webhook of its own, as Kubewarden
// registers one a policy.
type policy struct {
	id string
	// The settings, as JSON; or, for a policy group, its manifest (a path
	// in the repository), served with `policy-runner serve --policy`.
	settings, manifest string
	// The one namespace the webhook judges; "" for every namespace but
	// kube-system (the example policy's selector) and the groups' namespaces.
	namespace string
	// What the audit of an object made before the policy without
	// example.com/owner must say; "" where such an object passes.
	lacksOwner string
}

// The README's recommended settings for workloads, each with the id of its
// webhook: the one list, which the tests read too (the recordings and the
// hand-written requests are judged with them in tests/replay.rs and
// e2e.bats; tests/replay.rs holds them to the documentation and to
// cluster/policies/).
//
//go:embed recommended.json
var recommendedJSON []byte

var policies = recommended()

// recommended reads recommended.json, each policy's settings compact as
// the recordings' index.json holds them.
func recommended() []policy {
	var entries []struct {
		ID       string          `json:"id"`
		Settings json.RawMessage `json:"settings"`
	}
	decoder := json.NewDecoder(bytes.NewReader(recommendedJSON))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&entries); err != nil {
		panic(fmt.Sprintf("recommended.json: %v", err))
	}
	// What an audit of an object made before the policy without
	// example.com/owner says, by policy.
	lacksOwner := map[string]string{"owner-required": `lacks required annotations; add "example.com/owner"`}
	var out []policy
	for _, e := range entries {
		var settings bytes.Buffer
		if err := json.Compact(&settings, e.Settings); err != nil {
			panic(fmt.Sprintf("recommended.json: %s: %v", e.ID, err))
		}
		out = append(out, policy{id: e.ID, settings: settings.String(), lacksOwner: lacksOwner[e.ID]})
		delete(lacksOwner, e.ID)
	}
	if len(lacksOwner) > 0 {
		panic(fmt.Sprintf("recommended.json lacks the policies %v", lacksOwner))
	}
	return out
}

// group is a ClusterAdmissionPolicyGroup of the owner requirement and the
// allowlist, alone in its namespace.
var group = policy{id: "owned-and-allowed", manifest: "cluster/policies/owned-and-allowed.yaml",
	namespace: "grouped", lacksOwner: "workloads must name their owner"}

// set is webhooks that judge the same requests, and where their
// recordings go under test_data/cluster/recorded/<release>/.
type set struct {
	dir      string
	policies []policy
}

var sets = []set{{"", policies}, {"group", []policy{group}}}

func allPolicies() []policy {
	return append(append([]policy{}, policies...), group)
}

// judges says whether p's webhook is called for an object in namespace.
func (p policy) judges(namespace string) bool {
	if p.namespace != "" {
		return namespace == p.namespace
	}
	return namespace != "kube-system" && namespace != group.namespace
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
	streams    string // the generated streams of tests/decoder.rs
	oracleOnly bool   // run only the scenario that holds check to the API server
	boundsOnly bool   // run only the scenario that cuts a looping policy at its deadline
	load       bool   // run only the load scenario (load.go)
	noopModule string // the no-op module the load is measured against
	// The evaluator's waPC test policy, which adds an annotation: the
	// mutating webhook of mutation.go.
	testPolicies string

	loadHooks []loadWebhook
	// The load's client of the webhooks: the audit's calls and the scrapes.
	webhookClient *http.Client
	loadPhases    []loadPhase

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
	flag.StringVar(&h.streams, "streams", "", "the directory of the streams tests/decoder.rs generates (cluster/run writes them)")
	flag.BoolVar(&h.oracleOnly, "oracle-only", false, "run only the scenario that holds check to the API server (quicker, while working on it)")
	flag.BoolVar(&h.boundsOnly, "bounds-only", false, "run only the scenario that cuts a looping policy at its deadline, on a control plane of its own (quicker, while working on it)")
	flag.BoolVar(&h.load, "load", false, "run only the load scenario, on a control plane of its own: the policy and a no-op module (--noop-module) under thousands of requests")
	flag.StringVar(&h.noopModule, "noop-module", "", "the module that accepts every request unread (noop.wasm), for --load")
	flag.StringVar(&h.testPolicies, "test-policies", "", "the evaluator's test policies as its tests build them (target/test-policies: annotated, and raw/ as built): the mutating webhook and the lookups after the oracle")
	flag.BoolVar(&keep, "keep", false, "keep the run's directory (logs, recordings)")
	flag.Parse()
	if h.bin == "" || (h.external == "" && (h.runner == "" || h.module == "")) {
		fmt.Fprintln(os.Stderr, "harness: give --bin, and --runner with --module (or --webhook-url with --webhook-ca)")
		os.Exit(2)
	}
	if h.load && (h.external != "" || h.noopModule == "" || h.runner == "") {
		fmt.Fprintln(os.Stderr, "harness: --load needs --runner, --module and --noop-module, and no --webhook-url")
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

// scenario is a step of the run, with the senders whose requests it must
// bring to the webhooks (a user, a controller's service account, a node):
// the harness holds each step to its senders, and index.json carries the
// table, to which the Rust tests hold the recordings.
type scenario struct {
	Name    string   `json:"name"`
	Senders []string `json:"senders,omitempty"`
	do      func() error
	fatal   bool // its failure leaves nothing for the later steps to see
}

const (
	admin      = "kubernetes-admin"
	controller = "system:serviceaccount:kube-system:"
)

func (h *harness) scenarios() []scenario {
	// Last but the mutation's, on a control plane of its own: no
	// recording, no sender.
	oracle := scenario{Name: "hold check to the API server, object for object", do: h.oracle}
	if h.oracleOnly {
		return []scenario{oracle}
	}
	bounds := scenario{Name: "cut a looping policy at its deadline beside a sane one", do: h.bounds}
	if h.boundsOnly {
		return []scenario{
			{Name: "start the control plane", do: h.startControlPlane, fatal: true},
			bounds,
		}
	}
	if h.load {
		return h.loadScenarios()
	}
	return []scenario{
		{Name: "start the control plane", do: h.startControlPlane, fatal: true},
		{Name: "read the release", do: h.readRelease, fatal: true},
		{Name: "create the nodes and namespaces", do: h.prepare, fatal: true},
		{Name: "create objects before the policy", do: h.beforeThePolicy},
		{Name: "register the policy's webhooks", do: h.registerWebhooks, fatal: true},
		{Name: "apply a workload of each kind", do: h.applyWorkloads, Senders: []string{admin,
			controller + "deployment-controller", controller + "replicaset-controller",
			controller + "daemon-set-controller", controller + "statefulset-controller",
			controller + "job-controller", controller + "cronjob-controller",
			controller + "replication-controller"}},
		{Name: "hold check's predictions to what the controllers made", do: h.predictions},
		{Name: "do what a cluster does every day", do: h.everyDay, Senders: []string{admin,
			controller + "deployment-controller", controller + "replicaset-controller",
			controller + "daemon-set-controller", controller + "statefulset-controller",
			controller + "job-controller", controller + "generic-garbage-collector",
			"system:node:" + nodes[0]}},
		{Name: "refuse what the policy must refuse", do: h.refusals, Senders: []string{admin}},
		{Name: "run workloads under a policy group", do: h.grouped, Senders: []string{admin,
			controller + "deployment-controller", controller + "replicaset-controller",
			controller + "job-controller"}},
		{Name: "find every object the controllers must make", do: h.derivedObjects},
		{Name: "find no failed creation", do: h.noFailedCreate},
		{Name: "audit what the cluster holds, as the audit scanner does", do: h.audit},
		{Name: "write the recordings", do: h.writeRecordings},
		oracle,
		// On the oracle's control plane, which is still running.
		{Name: "hold a mutating policy to the API server", do: h.mutation},
		{Name: "answer lookups from the live API server as from its dump", do: h.lookups},
		{Name: "hold a policy set's mutations and refusals to the API server", do: h.policySet},
		bounds,
	}
}

func (h *harness) run() int {
	started := time.Now()
	for _, step := range h.scenarios() {
		fmt.Printf("== %s\n", step.Name)
		offsets := h.recordedSoFar()
		if err := step.do(); err != nil {
			h.fail("%s: %v", step.Name, err)
			if step.fatal {
				break
			}
		}
		if len(step.Senders) > 0 && h.external == "" {
			sent, err := h.sendersSince(offsets)
			if err != nil {
				h.fail("%s: %v", step.Name, err)
			}
			for _, sender := range step.Senders {
				if !sent[sender] {
					h.fail("%s: no request from %s reached the webhooks", step.Name, sender)
				}
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
