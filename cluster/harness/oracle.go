package main

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// The live API server is check's last oracle: the repository's manifests
// and the generated streams of tests/decoder.rs, applied as a server-side
// dry run with strict field validation to a control plane of their own,
// whose only webhook is the example policy, and each object's outcome
// held to what `policy-runner check` said of it. What the two may do
// otherwise is named in differences.tsv, with why; docs/check.md lists the
// same rows (tests/docs.rs holds it to them).

// examplePolicy is the policy whose rules, selector and settings both
// sides judge with.
const examplePolicy = "examples/cluster-admission-policy.yaml"

// outcome is what became of one object or document.
type outcome struct {
	// accepted, rejected or refused; on the API server's side unread
	// (kubectl never sent it), on check's absent (it said nothing of it)
	class   string
	message string // the rejection, or why it was refused
}

const (
	accepted = "accepted"
	rejected = "rejected"
	refused  = "refused"
	unread   = "unread"
)

func (o outcome) String() string {
	if o.message == "" {
		return o.class
	}
	return o.class + ": " + o.message
}

// checked is one row of check's report on one file: an object with its
// verdict, or a document it refused (unusable) or skipped (a note).
type checked struct {
	source     string // file:line, and the List item
	line, item int    // item -1 outside a List
	object     string // Kind namespace/name; "" for a document refused or skipped
	kind, name string
	namespace  string // "" for a cluster-wide object
	outcome    outcome
}

// oracle is the scenario: a control plane of its own (the other
// scenarios' objects would turn these creations into updates), the
// example policy its only webhook, every file applied as a dry run, and
// each object held to check's verdict.
func (h *harness) oracle() error {
	rows, err := differences()
	if err != nil {
		return err
	}
	files, err := h.oracleFiles()
	if err != nil {
		return err
	}
	started := time.Now()
	entries, namespaces, err := h.checkEach(files)
	if err != nil {
		return err
	}
	fmt.Printf("   check read %d files in %.0f s\n", len(files), time.Since(started).Seconds())
	if err := h.liveControlPlane(namespaces); err != nil {
		return err
	}
	started = time.Now()
	results := make([]*applied, len(files))
	errs := make([]error, len(files))
	// Two at a time: kubectl spends most of its time starting and waiting.
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = h.applyDry(files[i])
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Printf("   kubectl applied %d files in %.0f s\n", len(files), time.Since(started).Seconds())
	var all []compared
	for i, file := range files {
		if errs[i] != nil {
			h.fail("%s: %v", file, errs[i])
			continue
		}
		text, err := os.ReadFile(filepath.Join(h.root, file))
		if err != nil {
			return err
		}
		all = append(all, compareFile(file, entries[file], results[i], fileFacts{string(text), results[i]}, rows)...)
	}
	h.holdOracle(all, rows)
	return nil
}

// The generated streams applied: the first 50, each of which opens with
// another of the generator's documents (tests/decoder.rs, `streams`), and
// every fourth of the rest (by name), so that the scenario stays within a
// minute or two (kubectl runs twice a file, a fifth of a second each
// here); the same ones each run, which meet every row of differences.tsv.
const (
	firstStreams = 50
	streamStride = 4
)

// oracleFiles lists what is applied, relative to the repository: the
// generated streams (--streams), examples/, cluster/manifests/ and the
// resources the test suites name.
func (h *harness) oracleFiles() ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(path string) {
		if rel, err := filepath.Rel(h.root, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
		path = filepath.Clean(path)
		if !seen[path] {
			seen[path] = true
			files = append(files, path)
		}
	}
	manifest := func(path string) bool {
		ext := filepath.Ext(path)
		return ext == ".yaml" || ext == ".yml" || ext == ".json"
	}
	walk := func(dir string) error {
		return filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
			if err == nil && !entry.IsDir() && manifest(path) {
				add(path)
			}
			return err
		})
	}
	if h.streams == "" {
		return nil, fmt.Errorf("no --streams: cluster/run writes the generated streams and names them")
	}
	streams, err := filepath.Glob(filepath.Join(h.streams, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(streams) == 0 {
		return nil, fmt.Errorf("%s holds no stream", h.streams)
	}
	sort.Strings(streams)
	for i, stream := range streams {
		if i < firstStreams || i%streamStride == 0 {
			add(stream)
		}
	}
	for _, dir := range []string{"examples", "cluster/manifests"} {
		if err := walk(filepath.Join(h.root, dir)); err != nil {
			return nil, err
		}
	}
	// The suites' resources, old and new, as each test file names them.
	var tests []string
	err = filepath.WalkDir(filepath.Join(h.root, "tests"), func(path string, entry os.DirEntry, err error) error {
		if err == nil && entry.Name() == "policy-test.yaml" {
			tests = append(tests, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, test := range tests {
		var file struct {
			Resources []string `json:"resources"`
			Results   []struct {
				OldResource string `json:"oldResource"`
			} `json:"results"`
		}
		text, err := os.ReadFile(test)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(text, &file); err != nil {
			return nil, fmt.Errorf("%s: %w", test, err)
		}
		named := file.Resources
		for _, r := range file.Results {
			if r.OldResource != "" {
				named = append(named, r.OldResource)
			}
		}
		for _, resource := range named {
			path := filepath.Join(filepath.Dir(test), resource)
			info, err := os.Stat(path)
			if err != nil {
				return nil, fmt.Errorf("%s names %s: %w", test, resource, err)
			}
			if info.IsDir() {
				if err := walk(path); err != nil {
					return nil, err
				}
			} else {
				add(path)
			}
		}
	}
	return files, nil
}

// checkReport is the part of `check --output json` read here.
type checkReport struct {
	Results []struct {
		Object      string   `json:"object"`
		Allowed     bool     `json:"allowed"`
		Message     string   `json:"message"`
		DerivedFrom []string `json:"derivedFrom"`
		Source      string   `json:"source"`
	} `json:"results"`
	Unusable []struct {
		Reason string `json:"reason"`
		Source string `json:"source"`
	} `json:"unusable"`
	Notes []struct {
		Note   string `json:"note"`
		Source string `json:"source"`
	} `json:"notes"`
}

// readAsAList is check's note on an object kubectl reads as a List though
// its kind names none (`kind: ConfigMap` with `items`).
const readAsAList = "kubectl reads any object that has `items` as a List"

// runCheck runs check over files with the policy given, as kubectl apply
// sends them, and reads its report.
func (h *harness) runCheck(policy string, files []string) (*checkReport, error) {
	runner, err := filepath.Abs(h.runner)
	if err != nil {
		return nil, err
	}
	module, err := filepath.Abs(h.module)
	if err != nil {
		return nil, err
	}
	if policy, err = filepath.Abs(policy); err != nil {
		return nil, err
	}
	args := append([]string{"check", module}, files...)
	cmd := exec.Command(runner, append(args, "--policy", policy, "--kubectl-apply", "--no-derived", "--output", "json")...)
	cmd.Dir = h.root
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// 1: something rejected; 2: something unusable. Both are the point.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 && cmd.ProcessState.ExitCode() != 2 {
		return nil, fmt.Errorf("policy-runner check: %v: %s", err, errOut.String())
	}
	var report checkReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		return nil, fmt.Errorf("check's JSON: %w: %s", err, errOut.String())
	}
	return &report, nil
}

var sourcePattern = regexp.MustCompile(`^(.*):(\d+)(?: \(List item (\d+)\))?$`)

// placed reads a source as check writes it: file:line (List item n).
func placed(source string) (file string, line, item int) {
	m := sourcePattern.FindStringSubmatch(source)
	if m == nil {
		return source, 0, -1
	}
	line, _ = strconv.Atoi(m[2])
	item = -1
	if m[3] != "" {
		item, _ = strconv.Atoi(m[3])
	}
	return m[1], line, item
}

// checkEach runs check twice: with the example policy, for its verdicts,
// and with a policy of every kind, to list the objects the example's rules
// leave out (check names only the objects a policy covers). It returns each
// file's rows in the file's order, and the namespaces the objects name.
func (h *harness) checkEach(files []string) (map[string][]*checked, []string, error) {
	everyKindFile := filepath.Join(h.work, "every-kind.yaml")
	if err := os.WriteFile(everyKindFile, []byte(everyKind), 0o600); err != nil {
		return nil, nil, err
	}
	judged, err := h.runCheck(filepath.Join(h.root, examplePolicy), files)
	if err != nil {
		return nil, nil, err
	}
	listed, err := h.runCheck(everyKindFile, files)
	if err != nil {
		return nil, nil, err
	}
	verdicts := map[string]outcome{}
	for _, r := range judged.Results {
		if len(r.DerivedFrom) > 0 {
			continue
		}
		o := outcome{class: accepted}
		if !r.Allowed {
			o = outcome{rejected, r.Message}
		}
		verdicts[r.Source+" "+r.Object] = o
	}
	entries := map[string][]*checked{}
	namespaces := map[string]bool{"default": true}
	add := func(source, object string, o outcome) {
		file, line, item := placed(source)
		c := &checked{source: source, line: line, item: item, object: object, outcome: o}
		if object != "" {
			var place string
			c.kind, place, _ = strings.Cut(object, " ")
			namespace, name, namespaced := strings.Cut(place, "/")
			if namespaced {
				namespaces[namespace] = true
				c.namespace, c.name = namespace, name
			} else {
				c.name = place
			}
		}
		entries[file] = append(entries[file], c)
	}
	for _, r := range listed.Results {
		if len(r.DerivedFrom) > 0 {
			continue
		}
		o, covered := verdicts[r.Source+" "+r.Object]
		if !covered {
			// Left out by the example's rules or selector: the webhook
			// is not called, and the API server's own say decides.
			o = outcome{class: accepted}
		}
		delete(verdicts, r.Source+" "+r.Object)
		add(r.Source, r.Object, o)
	}
	for key := range verdicts {
		return nil, nil, fmt.Errorf("check judged %s with the example policy, and did not list it with every kind", key)
	}
	for _, u := range listed.Unusable {
		add(u.Source, "", outcome{refused, u.Reason})
	}
	for _, n := range listed.Notes {
		// What kubectl does without a word with an object that has
		// `items` (it sends the items, listed above): no refusal.
		if strings.Contains(n.Note, readAsAList) {
			continue
		}
		add(n.Source, "", outcome{refused, "note: " + n.Note})
	}
	for _, list := range entries {
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].line != list[j].line {
				return list[i].line < list[j].line
			}
			return list[i].item < list[j].item
		})
	}
	var names []string
	for namespace := range namespaces {
		names = append(names, namespace)
	}
	sort.Strings(names)
	return entries, names, nil
}

// liveControlPlane replaces the scenarios' control plane with a new one:
// no object of theirs, no webhook but the example policy's. It keeps its
// files in a directory of its own in the run's, and needs no controller
// manager: the namespaces' default service accounts, without which the
// API server admits no Pod, are made here.
func (h *harness) liveControlPlane(namespaces []string) error {
	h.stop()
	h.work = filepath.Join(h.work, "live")
	if err := os.MkdirAll(h.work, 0o700); err != nil {
		return err
	}
	if err := h.startAPIServer(); err != nil {
		return err
	}
	for _, namespace := range namespaces {
		if _, err := h.kubectl("get", "namespace", namespace); err != nil {
			// A name the API server refuses stays missing: so do the
			// objects in it, which check must then refuse too.
			if _, err := h.kubectl("create", "namespace", namespace); err != nil {
				fmt.Printf("   no namespace %q: %v\n", namespace, err)
				continue
			}
		}
		if _, err := h.kubectl("create", "serviceaccount", "default", "-n", namespace); err != nil {
			return err
		}
	}
	if err := h.installMeterCRD(); err != nil {
		return err
	}
	return h.registerExample()
}

//go:embed meter-crd.yaml
var meterCRD string

// installMeterCRD creates the control plane's one CRD and waits until the
// API server serves its kind.
func (h *harness) installMeterCRD() error {
	if _, err := h.kubectlIn(meterCRD, "create", "-f", "-"); err != nil {
		return fmt.Errorf("the Meter CRD: %w", err)
	}
	return eventually(30*time.Second, func() error {
		out, err := h.kubectl("get", "meters.schemas.example.org", "-A")
		if err != nil {
			return fmt.Errorf("the API server serves no Meter yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// registerExample serves the example policy (policy-runner serve
// --policy, unless an external webhook is given, which must serve it as
// require-owner) and registers it as Kubewarden's controller would: its
// rules and namespace selector, failurePolicy Fail.
func (h *harness) registerExample() error {
	var example policyManifest
	if err := h.readYAML(examplePolicy, &example); err != nil {
		return err
	}
	id := example.Metadata.Name
	caBundle := h.ca.pem
	url := strings.TrimSuffix(h.external, "/") + "/validate/" + id
	if h.external != "" {
		bundle, err := os.ReadFile(h.externalCA)
		if err != nil {
			return err
		}
		caBundle = bundle
	} else {
		cert, key, err := h.ca.serving(h.work, "webhook", "127.0.0.1")
		if err != nil {
			return err
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		served, err := h.start("webhook-"+id, h.runner, "serve", h.module,
			"--policy", filepath.Join(h.root, examplePolicy),
			"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cert", cert, "--key", key)
		if err != nil {
			return err
		}
		base := fmt.Sprintf("https://127.0.0.1:%d", port)
		if err := h.waitServed(served, base); err != nil {
			return err
		}
		url = base + "/validate/" + id
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": id},
		"webhooks":   []map[string]any{policyWebhook(id+".annotations-policy.test", url, caBundle, example)},
	})
	if _, err := h.kubectlIn(string(configuration), "create", "-f", "-"); err != nil {
		return err
	}
	return eventually(30*time.Second, func() error {
		out, err := h.kubectl("create", "--dry-run=server", "-f", h.manifests("refused/no-owner.yaml"))
		if err == nil || !strings.Contains(out, "lacks required annotations") {
			return fmt.Errorf("the webhook is not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// policyManifest is the part of a Kubewarden policy manifest its webhook
// is registered from.
type policyManifest struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector map[string]any   `json:"namespaceSelector"`
		Rules             []map[string]any `json:"rules"`
	} `json:"spec"`
}

// policyWebhook is the webhook Kubewarden's controller registers for a
// policy: its rules at any scope, its namespace selector (an
// AdmissionPolicy's own namespace), failurePolicy Fail, no side effects,
// matchPolicy Equivalent, and no reinvocationPolicy.
func policyWebhook(name, url string, caBundle []byte, manifest policyManifest) map[string]any {
	for _, rule := range manifest.Spec.Rules {
		rule["scope"] = "*"
	}
	webhook := map[string]any{
		"name": name,
		"clientConfig": map[string]any{
			"url":      url,
			"caBundle": base64.StdEncoding.EncodeToString(caBundle),
		},
		"rules":                   manifest.Spec.Rules,
		"failurePolicy":           "Fail",
		"sideEffects":             "None",
		"matchPolicy":             "Equivalent",
		"admissionReviewVersions": []string{"v1"},
		"timeoutSeconds":          10,
	}
	selector := manifest.Spec.NamespaceSelector
	if manifest.Metadata.Namespace != "" {
		selector = map[string]any{"matchLabels": map[string]string{
			"kubernetes.io/metadata.name": manifest.Metadata.Namespace}}
	}
	if selector != nil {
		webhook["namespaceSelector"] = selector
	}
	return webhook
}
