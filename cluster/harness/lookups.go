package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// The lookups of context-aware policies, held to the API server: the
// evaluator's waPC test policy looks up its object's Namespace
// (get_resource) and asks whether the sender may create ConfigMaps there
// (can_i, which RBAC decides), and its Go WASI one lists the ConfigMaps of
// that namespace (list_resources_by_namespace), each granted the kind by
// its ClusterAdmissionPolicy. `policy-runner run --live-cluster` asks the live
// API server through kubectl, as kwctl would; `--cluster-objects` answers
// from a `kubectl get -o yaml` dump of the same objects. Both must print
// the same lines, and record the same session: the same calls, answered
// with the same JSON; the live session, replayed, prints them again.

const lookupsNamespace = "lookups"

// lookupPolicies are the two ClusterAdmissionPolicies run asks, their
// modules the annotated test policies in dir.
func lookupPolicies(dir string) string {
	return fmt.Sprintf(`apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: namespace-not-locked
spec:
  module: file://%s
  mutating: true
  rules: []
  contextAwareResources:
    - apiVersion: v1
      kind: Namespace
  settings:
    annotation: example.com/looked-up
    denyLabel: locked
---
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: few-configmaps
spec:
  module: file://%s
  rules: []
  contextAwareResources:
    - apiVersion: v1
      kind: ConfigMap
  settings:
    forbidden: debug
    maxConfigMaps: 2
---
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: may-create-configmaps
spec:
  module: file://%s
  mutating: true
  rules: []
  settings:
    annotation: example.com/looked-up
    canI:
      verb: create
      resource: configmaps
`, filepath.Join(dir, "wapc.wasm"), filepath.Join(dir, "wasi.wasm"), filepath.Join(dir, "wapc.wasm"))
}

// lookupReview is a CREATE of a Pod in the namespace by a sender, as the
// API server would send it.
func lookupReview(user, groups string) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
"uid":"0f7d2b9c-4a51-4d8e-9c1e-%s","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"name":"web","namespace":"lookups",
"operation":"CREATE","userInfo":{"username":%q,"groups":%s},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"lookups"},
"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}},"oldObject":null,"dryRun":false}}`, user, user, groups)
}

// lookupSenders are whom RBAC must tell apart: the admin (system:masters,
// allowed before RBAC), a user a RoleBinding lets create ConfigMaps in
// the namespace, and one nothing does.
var lookupSenders = []struct{ user, groups, said string }{
	{"kubernetes-admin", `["system:masters","system:authenticated"]`, ""},
	{"bob", `["system:authenticated"]`, ""},
	{"alice", `["system:authenticated"]`, "alice may not create configmaps in lookups"},
}

// lookupRBAC lets bob create ConfigMaps in the namespace.
const lookupRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmap-writer
  namespace: lookups
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["create", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bob-configmaps
  namespace: lookups
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: configmap-writer
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: bob
`

// lookups is the scenario.
func (h *harness) lookups() error {
	if h.runner == "" || h.testPolicies == "" {
		fmt.Println("   skipped: it runs policy-runner on the evaluator's test policies (--runner, --test-policies)")
		return nil
	}
	// The annotated modules: a policy's mode is its metadata's.
	dir, err := filepath.Abs(h.testPolicies)
	if err != nil {
		return err
	}
	// The namespace, locked, and three ConfigMaps in it (this control
	// plane runs no controller manager, so no root-CA ConfigMap joins them).
	if _, err := h.kubectl("create", "namespace", lookupsNamespace); err != nil {
		return err
	}
	if _, err := h.kubectl("label", "namespace", lookupsNamespace, "locked=true"); err != nil {
		return err
	}
	for _, name := range []string{"one", "two", "three"} {
		if _, err := h.kubectl("create", "configmap", name, "-n", lookupsNamespace, "--from-literal=k="+name); err != nil {
			return err
		}
	}
	if _, err := h.kubectlIn(lookupRBAC, "create", "-f", "-"); err != nil {
		return err
	}
	policies := filepath.Join(h.work, "lookup-policies.yaml")
	// managedFields shown: the API server's get gives them, and so must
	// the dump; lists give them emptied either way. The RBAC objects
	// answer can_i from the dump.
	dump, err := h.kubectl("get", "namespaces,configmaps,roles,rolebindings,clusterroles,clusterrolebindings",
		"-A", "-o", "yaml", "--show-managed-fields")
	if err != nil {
		return err
	}
	dumped := filepath.Join(h.work, "lookup-dump.yaml")
	for path, text := range map[string]string{policies: lookupPolicies(dir), dumped: dump} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return err
		}
	}
	calls := 0
	for _, sender := range lookupSenders {
		review := filepath.Join(h.work, "lookup-"+sender.user+".review.json")
		if err := os.WriteFile(review, []byte(lookupReview(sender.user, sender.groups)), 0o600); err != nil {
			return err
		}
		n, err := h.holdLookups(policies, review, dumped, sender.user, sender.said)
		if err != nil {
			h.fail("lookups of a request by %s: %v", sender.user, err)
		}
		calls += n
	}
	fmt.Printf("   3 policies, 3 senders, %d lookups: the live API server and its dump answered alike, and each live session replays\n", calls)
	return nil
}

// holdLookups runs the policies on one review live, from the dump and
// replaying the live session, and wants the same lines and the same
// sessions: how many calls.
func (h *harness) holdLookups(policies, review, dumped, user, said string) (int, error) {
	live := strings.TrimSuffix(review, ".review.json") + "-live.yml"
	offline := strings.TrimSuffix(review, ".review.json") + "-offline.yml"
	liveLines, err := h.runLookups(policies, review, "--live-cluster", "--record-host-capabilities-interactions", live)
	if err != nil {
		return 0, err
	}
	offlineLines, err := h.runLookups(policies, review, "--cluster-objects", dumped, "--record-host-capabilities-interactions", offline)
	if err != nil {
		return 0, err
	}
	replayed, err := h.runLookups(policies, review, "--replay-host-capabilities-interactions", live)
	if err != nil {
		return 0, err
	}
	wanted := []string{"Namespace lookups is labelled locked=true", "Namespace lookups holds 3 ConfigMaps, more than 2"}
	if said != "" {
		wanted = append(wanted, said)
	} else if !strings.Contains(liveLines, `"patchType":"JSONPatch"`) {
		return 0, fmt.Errorf("%s may create ConfigMaps, so may-create-configmaps mutates, but run printed\n%s", user, liveLines)
	}
	for _, want := range wanted {
		if !strings.Contains(liveLines, want) {
			return 0, fmt.Errorf("run on the live API server's answers did not say %q:\n%s", want, liveLines)
		}
	}
	if offlineLines != liveLines {
		return 0, fmt.Errorf("run answered from the dump printed\n%s\nand from the live API server\n%s", offlineLines, liveLines)
	}
	if replayed != liveLines {
		return 0, fmt.Errorf("run replaying the live session printed\n%s\nand live\n%s", replayed, liveLines)
	}
	return sameSessions(live, offline)
}

// runLookups runs the policies on the review, kubectl and the admin's
// kubeconfig at hand for --live-cluster: run's lines.
func (h *harness) runLookups(policies, review string, args ...string) (string, error) {
	cmd := exec.Command(h.runner, append([]string{"run", policies, "-r", review}, args...)...)
	cmd.Env = append(os.Environ(),
		"PATH="+h.bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+h.admin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("policy-runner run %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// sameSessions reads two kwctl session files and wants the same calls, in
// the same order, answered with the same JSON: how many calls.
func sameSessions(a, b string) (int, error) {
	type exchange struct {
		Request  string `json:"request"`
		Response struct {
			Type    string `json:"type"`
			Payload string `json:"payload"`
			Message string `json:"message"`
		} `json:"response"`
	}
	read := func(path string) ([]exchange, error) {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var exchanges []exchange
		if err := yaml.Unmarshal(text, &exchanges); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		return exchanges, nil
	}
	left, err := read(a)
	if err != nil {
		return 0, err
	}
	right, err := read(b)
	if err != nil {
		return 0, err
	}
	if len(left) != len(right) {
		return 0, fmt.Errorf("%d calls live, %d from the dump", len(left), len(right))
	}
	for i := range left {
		l, r := left[i], right[i]
		if l.Request != r.Request {
			return 0, fmt.Errorf("call %d: asked\n%s\nlive and\n%s\nfrom the dump", i+1, l.Request, r.Request)
		}
		if l.Response.Type != r.Response.Type || l.Response.Message != r.Response.Message {
			return 0, fmt.Errorf("call %d (%s): %s %q live, %s %q from the dump", i+1,
				strings.TrimSpace(firstLine(l.Request)), l.Response.Type, l.Response.Message, r.Response.Type, r.Response.Message)
		}
		var lp, rp any
		if l.Response.Type == "Success" {
			if err := json.Unmarshal([]byte(l.Response.Payload), &lp); err != nil {
				return 0, fmt.Errorf("call %d: the live answer is no JSON: %v", i+1, err)
			}
			if err := json.Unmarshal([]byte(r.Response.Payload), &rp); err != nil {
				return 0, fmt.Errorf("call %d: the dump's answer is no JSON: %v", i+1, err)
			}
			if !reflect.DeepEqual(lp, rp) {
				return 0, fmt.Errorf("call %d (%s): answered differently: %s", i+1,
					strings.TrimSpace(firstLine(l.Request)), strings.Join(differ("", lp, rp), "; "))
			}
		}
	}
	return len(left), nil
}
