package main

import (
	"bytes"
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
	"sigs.k8s.io/yaml"
)

// A policy set held to the API server: two mutating policies of the
// evaluator's waPC test policy (which stamps an annotation where it is
// missing) and this policy as a validating one, each served by
// `policy-runner serve` and registered as Kubewarden's controller
// registers it (a configuration named after the policy, no
// reinvocationPolicy); then each object is created as a dry run, and what
// the API server answers (the object as mutated, or the refusal) must be
// what `policy-runner check --policy` says of it. The two stamps name the
// same annotation with different values, so the value that comes back says
// which the API server called first: the configuration named
// clusterwide-zz-… sorts before namespaced-set-shop-aa-…, whatever the
// policies' own names.
//
// serve has no monitor mode, so the set holds no monitor-mode policy here
// (tests/set.rs holds check's). It runs on the oracle's control plane,
// whose example webhook requires the same owner annotation in every
// namespace but kube-system, with the same message.

const (
	setShop   = "set-shop"
	setLegacy = "set-legacy"
	// Where the set's modules are, as their references name them.
	setRegistry = "registry.test:5000/policies"
)

// setPolicy is one policy of the set: its manifest, and the module serve
// runs for it.
type setPolicy struct {
	name     string
	mutating bool
	// Kubewarden's name for its webhook configuration (GetUniqueName).
	configuration string
	manifest      string
	module        string
}

func (h *harness) setPolicies(stamp, annotations string) []setPolicy {
	rules := `  rules:
    - apiGroups: [""]
      apiVersions: [v1]
      resources: [pods]
      operations: [CREATE, UPDATE]
    - apiGroups: [apps]
      apiVersions: [v1]
      resources: [deployments]
      operations: [CREATE, UPDATE]
`
	return []setPolicy{
		{"zz-stamp-owner", true, "clusterwide-zz-stamp-owner", `apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: zz-stamp-owner
spec:
  module: registry://` + setRegistry + `/stamp:v1
  mutating: true
` + rules + `  namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: NotIn
        values: [` + setLegacy + `]
  settings:
    annotation: example.com/owner
    value: platform
`, stamp},
		{"aa-stamp-team", true, "namespaced-" + setShop + "-aa-stamp-team", `apiVersion: policies.kubewarden.io/v1
kind: AdmissionPolicy
metadata:
  name: aa-stamp-team
  namespace: ` + setShop + `
spec:
  module: registry://` + setRegistry + `/stamp:v1
  mutating: true
` + rules + `  settings:
    annotation: example.com/owner
    value: shop-team
`, stamp},
		{"set-require-owner", false, "clusterwide-set-require-owner", `apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: set-require-owner
spec:
  module: registry://` + setRegistry + `/annotations:v1
` + rules + `  settings:
    criteria: containsAllOf
    values: [example.com/owner]
`, annotations},
	}
}

// setObjects are the objects created, each as its own document.
var setObjects = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"` + setShop + `"},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"noted","namespace":"` + setShop + `","annotations":{"example.com/note":"kept"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"` + setShop + `"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"api","image":"nginx:1.27"}]}}}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"old","namespace":"` + setLegacy + `"},"spec":{"containers":[{"name":"old","image":"nginx:1.27"}]}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"` + setShop + `"},"data":{"k":"v"}}`,
}

// setRow is the part of check's JSON row read here.
type setRow struct {
	Object   string `json:"object"`
	Allowed  bool   `json:"allowed"`
	Policies []struct {
		Policy   string          `json:"policy"`
		Accepted bool            `json:"accepted"`
		Message  *string         `json:"message"`
		Patch    json.RawMessage `json:"patch"`
	} `json:"policies"`
	DerivedFrom []string `json:"derivedFrom"`
}

// policySet is the scenario.
func (h *harness) policySet() error {
	if ok, err := h.ownWebhooks(); !ok {
		return err
	}
	stamp, err := filepath.Abs(filepath.Join(h.testPolicies, "raw", "wapc.wasm"))
	if err != nil {
		return err
	}
	dir := filepath.Join(h.work, "set")
	store := filepath.Join(dir, "store")
	if err := os.MkdirAll(filepath.Join(store, "registry", setRegistry), 0o700); err != nil {
		return err
	}
	for file, module := range map[string]string{"stamp:v1": stamp, "annotations:v1": h.module} {
		content, err := os.ReadFile(module)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(store, "registry", setRegistry, file), content, 0o600); err != nil {
			return err
		}
	}
	policies := h.setPolicies(stamp, h.module)
	cert, key, err := h.ca.serving(h.work, "set-webhook", "127.0.0.1")
	if err != nil {
		return err
	}
	// Each namespace with its default ServiceAccount, which a Pod is
	// admitted with: the controller that makes it may not have yet.
	for _, namespace := range []string{setShop, setLegacy} {
		if _, err := h.kubectl("create", "namespace", namespace); err != nil {
			return err
		}
		if out, err := h.kubectl("create", "serviceaccount", "default", "-n", namespace); err != nil &&
			!strings.Contains(out, "AlreadyExists") {
			return err
		}
	}
	for _, p := range policies {
		manifest := filepath.Join(dir, p.name+".yaml")
		if err := os.WriteFile(manifest, []byte(p.manifest), 0o600); err != nil {
			return err
		}
		base, err := h.serveWebhook("set-"+p.name, p.module, cert, key, "--policy", manifest)
		if err != nil {
			return err
		}
		if err := h.registerSetPolicy(p, base+"/validate/"+p.name); err != nil {
			return err
		}
	}
	objects := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(objects, []byte(strings.Join(setObjects, "\n---\n")+"\n"), 0o600); err != nil {
		return err
	}
	rows, err := h.checkSet(dir, store, objects)
	if err != nil {
		return err
	}
	// Registered when the stamp is seen, and the refusal: each
	// configuration is read within a second or so.
	if err := eventually(30*time.Second, func() error {
		out, err := h.kubectlIn(setObjects[0], "create", "--dry-run=server", "-o", "json", "-f", "-")
		if err != nil {
			return err
		}
		var object map[string]any
		if err := json.Unmarshal([]byte(out), &object); err != nil {
			return err
		}
		if annotation(object, "example.com/owner") != "platform" {
			return fmt.Errorf("the mutating webhooks are not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	}); err != nil {
		return err
	}
	changed, refused := 0, 0
	for _, object := range setObjects {
		c, r, err := h.holdSetObject(object, rows)
		if err != nil {
			h.fail("the policy set: %v", err)
			continue
		}
		changed += c
		refused += r
	}
	fmt.Printf("   %d objects: %d mutated and %d refused as check said, the mutating webhooks in configuration-name order\n",
		len(setObjects), changed, refused)
	return nil
}

// registerSetPolicy registers p as Kubewarden's controller does (v1.35,
// policy_subreconciler_webhook.go): a configuration named after the policy
// with one webhook, the policy's rules, an AdmissionPolicy's namespace as
// its selector, failurePolicy Fail, and no reinvocationPolicy.
func (h *harness) registerSetPolicy(p setPolicy, url string) error {
	var manifest policyManifest
	if err := yaml.Unmarshal([]byte(p.manifest), &manifest); err != nil {
		return err
	}
	webhook := policyWebhook(p.configuration+".kubewarden.admission", url, h.ca.pem, manifest)
	kind := "ValidatingWebhookConfiguration"
	if p.mutating {
		kind = "MutatingWebhookConfiguration"
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": p.configuration},
		"webhooks":   []map[string]any{webhook},
	})
	_, err := h.kubectlIn(string(configuration), "create", "-f", "-")
	return err
}

// checkSet runs `policy-runner check --policy dir --store store` on the
// objects: its JSON rows by object, the derived ones left out.
func (h *harness) checkSet(dir, store, objects string) (map[string]setRow, error) {
	cmd := exec.Command(h.runner, "check", "--policy", dir, "--store", store, "--offline",
		"-o", "json", objects)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); err != nil && (!ok || exit.ExitCode() != 1) {
		return nil, fmt.Errorf("policy-runner check --policy: %v: %s", err, strings.TrimSpace(errOut.String()))
	}
	var report struct {
		Results []setRow `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		return nil, fmt.Errorf("check's JSON: %w", err)
	}
	rows := map[string]setRow{}
	for _, row := range report.Results {
		if len(row.DerivedFrom) == 0 {
			rows[row.Object] = row
		}
	}
	return rows, nil
}

// holdSetObject creates object as a dry run and holds the answer to
// check's row: refused with one of its rejections, or returned with the
// annotations its patches make. It counts what was mutated and refused.
func (h *harness) holdSetObject(object string, rows map[string]setRow) (int, int, error) {
	var sent struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name        string            `json:"name"`
			Namespace   string            `json:"namespace"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(object), &sent); err != nil {
		return 0, 0, err
	}
	described := fmt.Sprintf("%s %s/%s", sent.Kind, sent.Metadata.Namespace, sent.Metadata.Name)
	out, err := h.kubectlIn(object, "create", "--dry-run=server", "-o", "json", "-f", "-")
	row, judged := rows[described]
	if judged && !row.Allowed {
		if err == nil {
			return 0, 0, fmt.Errorf("%s: check refuses it, the API server created it", described)
		}
		for _, p := range row.Policies {
			if !p.Accepted && p.Message != nil && strings.Contains(out, *p.Message) {
				return 0, 1, nil
			}
		}
		return 0, 0, fmt.Errorf("%s: the API server's refusal is none of check's: %s", described, strings.TrimSpace(out))
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: check admits it, the API server refuses it: %s", described, strings.TrimSpace(out))
	}
	// The object check judged, with each of its policies' patches applied
	// in the order called.
	want := []byte(object)
	mutated := 0
	for _, p := range row.Policies {
		if len(p.Patch) == 0 || string(p.Patch) == "null" {
			continue
		}
		patch, err := jsonpatch.DecodePatch(p.Patch)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %s's patch: %w", described, p.Policy, err)
		}
		if want, err = patch.Apply(want); err != nil {
			return 0, 0, fmt.Errorf("%s: %s's patch: %w", described, p.Policy, err)
		}
		mutated = 1
	}
	var wanted, returned map[string]any
	if err := json.Unmarshal(want, &wanted); err != nil {
		return 0, 0, err
	}
	if err := json.Unmarshal([]byte(out), &returned); err != nil {
		return 0, 0, err
	}
	if a, b := annotations(wanted), annotations(returned); !reflect.DeepEqual(a, b) {
		return 0, 0, fmt.Errorf("%s: the API server stored the annotations %v, check made %v", described, b, a)
	}
	return mutated, 0, nil
}

// annotations are an object's, sorted for a message.
func annotations(object map[string]any) []string {
	metadata, _ := object["metadata"].(map[string]any)
	found, _ := metadata["annotations"].(map[string]any)
	var list []string
	for key, value := range found {
		list = append(list, fmt.Sprintf("%s=%v", key, value))
	}
	sort.Strings(list)
	return list
}
