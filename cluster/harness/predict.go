package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// A policy for check that covers every kind, so that each object check
// derives is listed with its annotation keys, PersistentVolumeClaims too.
const everyKind = `apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: every-kind
spec:
  module: policy.wasm
  mode: protect
  rules:
    - apiGroups: ["*"]
      apiVersions: ["*"]
      resources: ["*"]
      operations: ["CREATE", "UPDATE"]
  settings:
    criteria: containsAllOf
    values: ["example.com/owner"]
`

// made is a derived object as both sides can name it: its kind, the
// manifest's object it comes from, and its annotation keys.
type made struct {
	Kind, Root string
	Keys       []string
}

func (m made) String() string {
	return fmt.Sprintf("%s from %s with [%s]", m.Kind, m.Root, strings.Join(m.Keys, " "))
}

// predictions runs `policy-runner check --kubectl-apply` over the manifests
// just applied and compares every object it says the controllers will make
// with what they made: kinds, origins and annotation keys, both ways.
func (h *harness) predictions() error {
	if h.runner == "" {
		return fmt.Errorf("no --runner to check with")
	}
	policyFile := filepath.Join(h.work, "every-kind.yaml")
	if err := os.WriteFile(policyFile, []byte(everyKind), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(h.runner, "check", h.module, h.manifests("apply"),
		"--policy", policyFile, "--kubectl-apply", "--output", "json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		return fmt.Errorf("policy-runner check: %v: %s", err, errOut.String())
	}
	var report struct {
		Results []struct {
			Object      string   `json:"object"`
			DerivedFrom []string `json:"derivedFrom"`
			Annotations []string `json:"annotations"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		return fmt.Errorf("check's JSON: %w", err)
	}
	predicted := map[string]made{}
	roots := map[string]bool{}
	for _, r := range report.Results {
		if len(r.DerivedFrom) == 0 {
			roots[r.Object] = true
			continue
		}
		kind, _, _ := strings.Cut(r.Object, " ")
		m := made{kind, r.DerivedFrom[0], r.Annotations}
		predicted[m.String()] = m
	}
	actual, err := h.madeByControllers(roots)
	if err != nil {
		return err
	}
	for key := range predicted {
		if _, ok := actual[key]; !ok {
			h.fail("check predicted a %s; the cluster made none such", key)
		}
	}
	for key := range actual {
		if _, ok := predicted[key]; !ok {
			h.fail("the cluster made a %s; check did not predict it", key)
		}
	}
	names := make([]string, 0, len(actual))
	for key := range actual {
		names = append(names, key)
	}
	sort.Strings(names)
	for _, key := range names {
		fmt.Printf("   made: %s\n", key)
	}
	return nil
}

// madeByControllers lists what the controllers made from the objects in
// roots (`Kind namespace/name`), each traced to its root by its owners; a
// StatefulSet's claims, which it does not own, by their names.
func (h *harness) madeByControllers(roots map[string]bool) (map[string]made, error) {
	byUID := map[string]map[string]any{}
	var all []map[string]any
	for _, resource := range []string{"deployments", "replicasets", "daemonsets", "statefulsets",
		"replicationcontrollers", "jobs", "cronjobs", "pods", "persistentvolumeclaims"} {
		list, err := h.getJSON("get", resource, "-n", "shop")
		if err != nil {
			return nil, err
		}
		for _, item := range items(list) {
			metadata := item["metadata"].(map[string]any)
			byUID[metadata["uid"].(string)] = item
			all = append(all, item)
		}
	}
	describe := func(o map[string]any) string {
		metadata := o["metadata"].(map[string]any)
		return fmt.Sprintf("%s %s/%s", o["kind"], metadata["namespace"], metadata["name"])
	}
	out := map[string]made{}
	for _, o := range all {
		root := o
		for depth := 0; depth < 8; depth++ {
			refs, _ := root["metadata"].(map[string]any)["ownerReferences"].([]any)
			if len(refs) == 0 {
				break
			}
			owner := byUID[refs[0].(map[string]any)["uid"].(string)]
			if owner == nil {
				break
			}
			root = owner
		}
		rootName := describe(root)
		if root["kind"] == "PersistentVolumeClaim" {
			for candidate := range roots {
				if set, ok := strings.CutPrefix(candidate, "StatefulSet shop/"); ok &&
					strings.Contains(name(root), "-"+set+"-") {
					rootName = candidate
				}
			}
		}
		isRoot := root["metadata"].(map[string]any)["uid"] == o["metadata"].(map[string]any)["uid"]
		if (isRoot && root["kind"] != "PersistentVolumeClaim") || !roots[rootName] {
			continue
		}
		m := made{o["kind"].(string), rootName, annotationKeys(o)}
		out[m.String()] = m
	}
	return out, nil
}
