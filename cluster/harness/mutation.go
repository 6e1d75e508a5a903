package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// The mutating side of serve and run, held to the API server: the
// evaluator's own waPC test policy, which adds an annotation where it is
// missing, registered as a mutating webhook (policy-runner serve); what the
// API server stores after applying the webhook's JSONPatch must be what
// `policy-runner run` makes of the same review, and a policy whose
// spec.mutating is false must be refused as policy-server refuses it. It
// runs on the oracle's control plane, whose only other webhook judges Pods
// and workloads: ConfigMaps and Services meet this one alone.

const (
	// The namespace where the webhook may mutate, and the one where the
	// policy refuses-mutation, which may not, is called instead.
	mutatedNamespace     = "mutated"
	notMutatingNamespace = "not-mutating"
	mutationKey          = "example.com/mutated"
	mutationValue        = "by-the-webhook"
	refusingPolicy       = "refuses-mutation"
)

// The test policy's settings, the same for both webhooks and for run.
var mutationSettings = fmt.Sprintf(`{"annotation":%q,"value":%q}`, mutationKey, mutationValue)

// policyServerRefusal is policy-server's message for a mutation that the
// policy's spec.mutating does not allow.
func policyServerRefusal(policy string) string {
	return "Request rejected by policy " + policy +
		". The policy attempted to mutate the request, but it is currently configured to not allow mutations."
}

// refusingManifest is the ClusterAdmissionPolicy that serve --policy
// judges with: its module is serve's argument, so spec.module is any text
// there; run reads it, so there it names the module's file.
func refusingManifest(module string) string {
	return fmt.Sprintf(`apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: %s
spec:
  module: %s
  mutating: false
  rules: []
  settings:
    annotation: %s
    value: %s
`, refusingPolicy, module, mutationKey, mutationValue)
}

// mutatingCase is one object sent as a dry run where the webhook mutates,
// and the annotation the API server must return it with.
type mutatingCase struct {
	what   string
	verb   string // kubectl's: apply, or create where no annotation may be sent
	object string
	want   string // the value of mutationKey on the object returned
	// The review's object must have no metadata.annotations: the policy
	// creates the map.
	bare bool
}

func mutatingCases() []mutatingCase {
	return []mutatingCase{
		{"a ConfigMap with other annotations", "apply",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"annotated","namespace":"mutated","annotations":{"example.com/owner":"team-a","example.com/note":"a/b~c"}},"data":{"k":"v"}}`,
			mutationValue, false},
		// kubectl apply writes its last-applied-configuration annotation
		// into every object it creates: only create sends one without
		// metadata.annotations, which the policy must then add whole.
		{"a ConfigMap without any annotation", "create",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bare","namespace":"mutated"},"data":{"k":"v"}}`,
			mutationValue, true},
		{"a ConfigMap that carries the annotation already", "apply",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept","namespace":"mutated","annotations":{"example.com/mutated":"kept"}}}`,
			"kept", false},
		{"a Service without any annotation", "create",
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"mutated"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080}]}}`,
			mutationValue, true},
	}
}

// afterAdmission are the fields the API server sets once the mutating
// webhooks have answered, by kind ("" for every kind): neither the review
// nor run's patch can hold them, so they are removed from both sides. Each
// was seen to differ here, and nothing else did. Not among them: the
// managedFields, which the API server fills in before it calls the
// webhooks (and leaves alone after, the webhook's annotation unowned);
// resourceVersion, which a dry run never writes to etcd to get; and
// generation, which ConfigMaps and Services do not have.
var afterAdmission = map[string][][]string{
	"": {
		// Given in the registry's create (BeforeCreate), after admission.
		{"metadata", "uid"},
		{"metadata", "creationTimestamp"},
	},
	"Service": {
		// The service IP allocator's, in the Service registry's create:
		// the address (a dry run allocates one, and gives it back) and
		// the IP families it was taken from, defaulted there beside it.
		{"spec", "clusterIP"},
		{"spec", "clusterIPs"},
		{"spec", "ipFamilies"},
		{"spec", "ipFamilyPolicy"},
	},
}

// mutation is the scenario.
func (h *harness) mutation() error {
	if ok, err := h.ownWebhooks(); !ok {
		return err
	}
	// The waPC test policy as built: settings alone may mutate.
	module, err := filepath.Abs(filepath.Join(h.testPolicies, "raw", "wapc.wasm"))
	if err != nil {
		return err
	}
	manifest := filepath.Join(h.work, refusingPolicy+".yaml")
	if err := os.WriteFile(manifest, []byte(refusingManifest("registry.example/not-read:v1")), 0o600); err != nil {
		return err
	}
	cert, key, err := h.ca.serving(h.work, "mutating-webhook", "127.0.0.1")
	if err != nil {
		return err
	}
	mutatingRecord := filepath.Join(h.work, "reviews-mutating.jsonl")
	mutatingBase, err := h.serveWebhook("mutating", module, cert, key,
		"--settings-json", mutationSettings, "--record", mutatingRecord)
	if err != nil {
		return err
	}
	refusingRecord := filepath.Join(h.work, "reviews-"+refusingPolicy+".jsonl")
	refusingBase, err := h.serveWebhook(refusingPolicy, module, cert, key,
		"--policy", manifest, "--record", refusingRecord)
	if err != nil {
		return err
	}
	if err := h.registerMutating(mutatingBase+"/validate/mutating", refusingBase+"/validate/"+refusingPolicy); err != nil {
		return err
	}

	cases := mutatingCases()
	for _, c := range cases {
		if err := h.holdMutation(c, module, mutatingRecord); err != nil {
			h.fail("%s: %v", c.what, err)
		}
	}
	if err := h.holdRefusal(module, refusingRecord); err != nil {
		h.fail("a mutation where spec.mutating is false: %v", err)
	}
	fmt.Printf("   %d objects: each as run patched it; 1 mutation refused as policy-server refuses it\n", len(cases))
	return nil
}

// namespaceWebhook is a webhook of this harness's CA for the objects of
// rule in one namespace: failurePolicy Fail, no side effects, and
// webhookTimeout.
func (h *harness) namespaceWebhook(name, url string, rule map[string]any, namespace string) map[string]any {
	return map[string]any{
		"name": name,
		"clientConfig": map[string]any{
			"url":      url,
			"caBundle": base64.StdEncoding.EncodeToString(h.ca.pem),
		},
		"rules":                   []map[string]any{rule},
		"failurePolicy":           "Fail",
		"sideEffects":             "None",
		"admissionReviewVersions": []string{"v1"},
		"timeoutSeconds":          webhookTimeout,
		"namespaceSelector": map[string]any{
			"matchLabels": map[string]string{"kubernetes.io/metadata.name": namespace},
		},
	}
}

// registerMutating creates the namespaces and registers both webhooks,
// then waits until the API server calls the first.
func (h *harness) registerMutating(mutatingURL, refusingURL string) error {
	for _, namespace := range []string{mutatedNamespace, notMutatingNamespace} {
		if _, err := h.kubectl("create", "namespace", namespace); err != nil {
			return err
		}
	}
	// Mutating webhooks are called once each, as Kubewarden registers them.
	webhook := func(name, url string, rule map[string]any, namespace string) map[string]any {
		hook := h.namespaceWebhook(name, url, rule, namespace)
		hook["reinvocationPolicy"] = "Never"
		return hook
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "MutatingWebhookConfiguration",
		"metadata":   map[string]any{"name": "annotations-policy-mutating"},
		"webhooks": []map[string]any{
			webhook("mutating.annotations-policy.test", mutatingURL, map[string]any{
				"apiGroups": []string{""}, "apiVersions": []string{"v1"},
				"operations": []string{"CREATE", "UPDATE"}, "resources": []string{"configmaps", "services"},
				"scope": "Namespaced",
			}, mutatedNamespace),
			webhook(refusingPolicy+".annotations-policy.test", refusingURL, map[string]any{
				"apiGroups": []string{""}, "apiVersions": []string{"v1"},
				"operations": []string{"CREATE"}, "resources": []string{"configmaps"},
				"scope": "Namespaced",
			}, notMutatingNamespace),
		},
	})
	if _, err := h.kubectlIn(string(configuration), "create", "-f", "-"); err != nil {
		return err
	}
	// As registerExample waits for its refusal: the configuration is
	// read within a second or so. The probe's name is none of the cases'.
	probe := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe","namespace":"mutated"}}`
	return eventually(30*time.Second, func() error {
		out, err := h.kubectlIn(probe, "create", "--dry-run=server", "-o", "json", "-f", "-")
		if err != nil {
			return err
		}
		var object map[string]any
		if err := json.Unmarshal([]byte(out), &object); err != nil {
			return err
		}
		if annotation(object, mutationKey) != mutationValue {
			return fmt.Errorf("the mutating webhook is not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

func annotation(object map[string]any, key string) string {
	metadata, _ := object["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	value, _ := annotations[key].(string)
	return value
}

// recordedLine is one line of serve's --record.
type recordedLine struct {
	Review   json.RawMessage `json:"review"`
	Response json.RawMessage `json:"response"`
}

// recordedFor finds the last review the webhook recorded of the object
// named, with the webhook's answer: the API server calls a webhook once a
// request here (reinvocationPolicy Never).
func recordedFor(path, kind, namespace, name string) (*recordedLine, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	var found *recordedLine
	for scanner.Scan() {
		var line recordedLine
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var review struct {
			Request struct {
				Kind      struct{ Kind string } `json:"kind"`
				Namespace string                `json:"namespace"`
				Name      string                `json:"name"`
			} `json:"request"`
		}
		if err := json.Unmarshal(line.Review, &review); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r := review.Request
		if r.Kind.Kind == kind && r.Namespace == namespace && r.Name == name {
			found = &line
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%s holds no review of %s %s/%s", filepath.Base(path), kind, namespace, name)
	}
	return found, nil
}

// ranLine is the part of run's line (kwctl's AdmissionResponse) read here.
type ranLine struct {
	Allowed   bool    `json:"allowed"`
	PatchType *string `json:"patchType"`
	Patch     *string `json:"patch"`
	Status    *struct {
		Message string `json:"message"`
	} `json:"status"`
}

// answered is the part of serve's AdmissionReview answer read here.
type answered struct {
	Response ranLine `json:"response"`
}

// runReview writes the review to the run's directory and runs
// `policy-runner run target -r <it>` with args: run's one line, parsed.
func (h *harness) runReview(name string, review json.RawMessage, target string, args ...string) (string, ranLine, error) {
	file := filepath.Join(h.work, name+".review.json")
	if err := os.WriteFile(file, review, 0o600); err != nil {
		return "", ranLine{}, err
	}
	cmd := exec.Command(h.runner, append([]string{"run", target, "-r", file}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", ranLine{}, fmt.Errorf("policy-runner run: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	line := strings.TrimSpace(out.String())
	if strings.Count(line, "\n") > 0 {
		return line, ranLine{}, fmt.Errorf("policy-runner run printed more than one line: %s", line)
	}
	var ran ranLine
	if err := json.Unmarshal([]byte(line), &ran); err != nil {
		return line, ranLine{}, fmt.Errorf("policy-runner run's line: %w: %s", err, line)
	}
	return line, ran, nil
}

// holdMutation sends one object as a dry run, and holds what the API
// server returned to run's patch of the review the webhook received.
func (h *harness) holdMutation(c mutatingCase, module, record string) error {
	var sent struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name, Namespace string
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(c.object), &sent); err != nil {
		return err
	}
	object := fmt.Sprintf("%s %s/%s", sent.Kind, sent.Metadata.Namespace, sent.Metadata.Name)
	// kubectl leaves the managedFields out of what it prints unless told:
	// the API server's object is wanted whole.
	out, err := h.kubectlIn(c.object, c.verb, "--dry-run=server", "--validate=strict",
		"--show-managed-fields", "-o", "json", "-f", "-")
	if err != nil {
		return err
	}
	var returned map[string]any
	if err := json.Unmarshal([]byte(out), &returned); err != nil {
		return fmt.Errorf("%s: kubectl's output: %w", object, err)
	}
	if got := annotation(returned, mutationKey); got != c.want {
		return fmt.Errorf("%s: the API server returned %s=%q, want %q", object, mutationKey, got, c.want)
	}
	line, err := recordedFor(record, sent.Kind, sent.Metadata.Namespace, sent.Metadata.Name)
	if err != nil {
		return err
	}
	var served answered
	if err := json.Unmarshal(line.Response, &served); err != nil {
		return fmt.Errorf("%s: the webhook's answer: %w", object, err)
	}
	printed, ran, err := h.runReview(sent.Kind+"-"+sent.Metadata.Name, line.Review, module,
		"--settings-json", mutationSettings)
	if err != nil {
		return fmt.Errorf("%s: %w", object, err)
	}
	if !ran.Allowed || !served.Response.Allowed {
		return fmt.Errorf("%s: not allowed: run printed %s; the webhook answered %s", object, printed, line.Response)
	}
	if text := func(s *string) string {
		if s == nil {
			return "no patch"
		}
		return *s
	}; text(ran.Patch) != text(served.Response.Patch) || text(ran.PatchType) != text(served.Response.PatchType) {
		return fmt.Errorf("%s: run's patch (%s, %s) is not the webhook's (%s, %s)", object,
			text(ran.PatchType), text(ran.Patch), text(served.Response.PatchType), text(served.Response.Patch))
	}
	// The object as the webhook received it, with run's patch applied.
	var review struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(line.Review, &review); err != nil {
		return err
	}
	if c.bare {
		var request map[string]any
		if err := json.Unmarshal(review.Request.Object, &request); err != nil {
			return fmt.Errorf("%s: the review's object: %w", object, err)
		}
		if metadata, _ := request["metadata"].(map[string]any); metadata["annotations"] != nil {
			return fmt.Errorf("%s: the review's object has annotations already: %v", object, metadata["annotations"])
		}
	}
	patched := []byte(review.Request.Object)
	if ran.Patch != nil {
		if ran.PatchType == nil || *ran.PatchType != "JSONPatch" {
			return fmt.Errorf("%s: run's patch is no JSONPatch: %s", object, printed)
		}
		operations, err := base64.StdEncoding.DecodeString(*ran.Patch)
		if err != nil {
			return fmt.Errorf("%s: run's patch: %w", object, err)
		}
		patch, err := jsonpatch.DecodePatch(operations)
		if err != nil {
			return fmt.Errorf("%s: run's patch %s: %w", object, operations, err)
		}
		if patched, err = patch.Apply(patched); err != nil {
			return fmt.Errorf("%s: run's patch %s does not apply to the review's object: %w", object, operations, err)
		}
	}
	var expected map[string]any
	if err := json.Unmarshal(patched, &expected); err != nil {
		return fmt.Errorf("%s: the patched object: %w", object, err)
	}
	for _, path := range append(afterAdmission[""], afterAdmission[sent.Kind]...) {
		remove(expected, path)
		remove(returned, path)
	}
	if differences := differ("", expected, returned); len(differences) > 0 {
		return fmt.Errorf("%s: the API server returned another object than run's patch makes: %s", object,
			strings.Join(differences, "; "))
	}
	return nil
}

// holdRefusal sends a ConfigMap without the annotation where the policy
// may not mutate: the API server must refuse it with policy-server's
// message, and run, given the policy's manifest, must say the same.
func (h *harness) holdRefusal(module, record string) error {
	object := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unmutated","namespace":"not-mutating"},"data":{"k":"v"}}`
	message := policyServerRefusal(refusingPolicy)
	out, err := h.kubectlIn(object, "apply", "--dry-run=server", "--validate=strict", "-o", "json", "-f", "-")
	fmt.Printf("   ConfigMap not-mutating/unmutated: %s", firstLine(out))
	want := `admission webhook "` + refusingPolicy + `.annotations-policy.test" denied the request: ` + message
	if err == nil {
		return fmt.Errorf("the API server accepted it")
	}
	if !strings.Contains(out, want) {
		return fmt.Errorf("refused, but not with %q: %s", want, strings.TrimSpace(out))
	}
	line, err := recordedFor(record, "ConfigMap", notMutatingNamespace, "unmutated")
	if err != nil {
		return err
	}
	manifest := filepath.Join(h.work, refusingPolicy+"-run.yaml")
	if err := os.WriteFile(manifest, []byte(refusingManifest("file://"+module)), 0o600); err != nil {
		return err
	}
	printed, ran, err := h.runReview("ConfigMap-unmutated", line.Review, manifest)
	if err != nil {
		return err
	}
	if ran.Allowed || ran.Status == nil || ran.Status.Message != message || ran.Patch != nil {
		return fmt.Errorf("policy-runner run printed %s, not a refusal with %q", printed, message)
	}
	return nil
}

// remove deletes the field at path, where it is.
func remove(object map[string]any, path []string) {
	for i, key := range path {
		if i == len(path)-1 {
			delete(object, key)
			return
		}
		next, ok := object[key].(map[string]any)
		if !ok {
			return
		}
		object = next
	}
}

// differ names each field where want and got differ, as a dotted path with
// both values.
func differ(path string, want, got any) []string {
	wantMap, wantIsMap := want.(map[string]any)
	gotMap, gotIsMap := got.(map[string]any)
	if wantIsMap && gotIsMap {
		keys := map[string]bool{}
		for key := range wantMap {
			keys[key] = true
		}
		for key := range gotMap {
			keys[key] = true
		}
		var sorted []string
		for key := range keys {
			sorted = append(sorted, key)
		}
		sort.Strings(sorted)
		var out []string
		for _, key := range sorted {
			field := key
			if path != "" {
				field = path + "." + key
			}
			wantValue, inWant := wantMap[key]
			gotValue, inGot := gotMap[key]
			switch {
			case !inWant:
				out = append(out, fmt.Sprintf("%s: run's patch gives none, the API server %s", field, show(gotValue)))
			case !inGot:
				out = append(out, fmt.Sprintf("%s: run's patch gives %s, the API server none", field, show(wantValue)))
			default:
				out = append(out, differ(field, wantValue, gotValue)...)
			}
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("%s: run's patch gives %s, the API server %s", path, show(want), show(got))}
}

func show(value any) string {
	text, _ := json.Marshal(value)
	return string(text)
}
