package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// audited is one object as the audit scanner sends it, and each policy's
// verdict on it.
type audited struct {
	review   map[string]any
	verdicts map[string]verdict
	before   bool // created before the webhooks were registered
}

// auditRules are the rules of metadata.yml that the audit scanner keeps
// (adm-controller internal/audit-scanner/policies/client.go,
// filterWildcardRules and filterNonCreateOperations): it drops a rule with
// "*" in its groups, versions or resources, and one whose operations do not
// name CREATE itself ("*" is not CREATE there).
func (h *harness) auditRules() ([][3]string, error) {
	var metadata struct {
		Rules []struct {
			APIGroups   []string `json:"apiGroups"`
			APIVersions []string `json:"apiVersions"`
			Resources   []string `json:"resources"`
			Operations  []string `json:"operations"`
		} `json:"rules"`
	}
	if err := h.readYAML("metadata.yml", &metadata); err != nil {
		return nil, err
	}
	has := func(list []string, item string) bool {
		for _, x := range list {
			if x == item {
				return true
			}
		}
		return false
	}
	var resources [][3]string
	for _, rule := range metadata.Rules {
		if has(rule.APIGroups, "*") || has(rule.APIVersions, "*") || has(rule.Resources, "*") {
			continue
		}
		if !has(rule.Operations, "CREATE") {
			continue
		}
		for _, group := range rule.APIGroups {
			for _, version := range rule.APIVersions {
				for _, resource := range rule.Resources {
					resources = append(resources, [3]string{group, version, resource})
				}
			}
		}
	}
	return resources, nil
}

// scannerReview is the AdmissionReview the audit scanner sends for a stored
// object, built as its newAdmissionRequest builds it
// (internal/audit-scanner/scanner/admission_request.go): a CREATE of the
// object as stored, with no userInfo (its zero value), no old object and the
// Kind as its resource; host/src/admission/audit.rs builds the same for check.
func scannerReview(object map[string]any) map[string]any {
	apiVersion, _ := object["apiVersion"].(string)
	group, version := "", apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	kind, _ := object["kind"].(string)
	metadata, _ := object["metadata"].(map[string]any)
	gvk := map[string]any{"group": group, "version": version, "kind": kind}
	request := map[string]any{
		"uid":         metadata["uid"],
		"kind":        gvk,
		"resource":    map[string]any{"group": group, "version": version, "resource": kind},
		"requestKind": gvk,
		"name":        metadata["name"],
		"operation":   "CREATE",
		"userInfo":    map[string]any{},
		"object":      object,
		"oldObject":   nil,
	}
	if namespace, _ := metadata["namespace"].(string); namespace != "" {
		request["namespace"] = namespace
	}
	return map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
}

// audit does what the audit scanner does once the scenarios are over: for
// each policy, it lists the objects of every resource its rules audit, in
// the namespaces its selector admits (policy.judges), and sends each to the
// policy's /audit/<id>. Every object the cluster made or admitted must
// pass; an object created before the policy that breaks it (one whose
// metadata lacks the owner: cluster/manifests/before/) must fail each
// policy that requires the owner, with its message. Objects being deleted are left out: the
// scanner meets them or not, as its timing falls.
func (h *harness) audit() error {
	if h.external != "" {
		fmt.Println("   audited by the external webhook: verdicts not held")
	}
	resources, err := h.auditRules()
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if h.external != "" {
		bundle, err := os.ReadFile(h.externalCA)
		if err != nil {
			return err
		}
		pool.AppendCertsFromPEM(bundle)
	} else {
		pool.AddCert(h.ca.cert)
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	h.audits = map[string]*audited{}
	for _, r := range resources {
		path := "/apis/" + r[0] + "/" + r[1] + "/" + r[2]
		if r[0] == "" {
			path = "/api/" + r[1] + "/" + r[2]
		}
		text, err := h.kubectl("get", "--raw", path)
		if err != nil {
			return fmt.Errorf("kubectl get --raw %s: %w: %s", path, err, text)
		}
		var list map[string]any
		if err := json.Unmarshal([]byte(text), &list); err != nil {
			return fmt.Errorf("kubectl get --raw %s: %w", path, err)
		}
		// A list's items carry no kind of their own: the dynamic client the
		// scanner lists with gives each the list's.
		apiVersion, _ := list["apiVersion"].(string)
		kind := strings.TrimSuffix(list["kind"].(string), "List")
		for _, object := range items(list) {
			object["apiVersion"], object["kind"] = apiVersion, kind
			metadata := object["metadata"].(map[string]any)
			namespace, _ := metadata["namespace"].(string)
			if metadata["deletionTimestamp"] != nil {
				continue
			}
			created, _ := time.Parse(time.RFC3339, metadata["creationTimestamp"].(string))
			review := scannerReview(object)
			a := &audited{review: review, verdicts: map[string]verdict{}, before: created.Before(h.registered)}
			body, _ := json.Marshal(review)
			for _, p := range allPolicies() {
				if !p.judges(namespace) {
					continue
				}
				v, err := h.askAudit(client, p.id, body)
				if err != nil {
					return fmt.Errorf("%s %s/%s: %w", kind, metadata["namespace"], metadata["name"], err)
				}
				a.verdicts[p.id] = v
			}
			if len(a.verdicts) == 0 {
				continue
			}
			h.audits[fmt.Sprintf("%s %s/%s", kind, metadata["namespace"], metadata["name"])] = a
		}
	}
	if h.external == "" {
		h.holdAudits()
	}
	return nil
}

func (h *harness) askAudit(client *http.Client, id string, body []byte) (verdict, error) {
	url := h.webhookBase[id] + "/audit/" + id
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return verdict{}, err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return verdict{}, fmt.Errorf("%s answered %s: %s", url, resp.Status, text)
	}
	v, err := readAnswer(text)
	if err != nil {
		return verdict{}, fmt.Errorf("%s: %w", url, err)
	}
	return v, nil
}

// holdAudits checks the reports, and prints them per policy and kind.
func (h *harness) holdAudits() {
	type tally struct{ pass, fail int }
	reports := map[string]*tally{}
	names := make([]string, 0, len(h.audits))
	for name := range h.audits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a := h.audits[name]
		object := a.review["request"].(map[string]any)["object"].(map[string]any)
		owned := false
		for _, key := range annotationKeys(object) {
			owned = owned || key == "example.com/owner"
		}
		for _, p := range allPolicies() {
			v, judged := a.verdicts[p.id]
			if !judged {
				continue
			}
			kind := object["kind"].(string)
			key := p.id + " | " + kind
			if reports[key] == nil {
				reports[key] = &tally{}
			}
			if v.Allowed {
				reports[key].pass++
			} else {
				reports[key].fail++
			}
			breaks := a.before && !owned && p.lacksOwner != ""
			switch {
			case breaks && v.Allowed:
				h.fail("audit: %s was created before the policy without its owner, and passed %s", name, p.id)
			case breaks && !strings.Contains(v.Message, p.lacksOwner):
				h.fail("audit: %s failed %s with the wrong message: %s", name, p.id, v.Message)
			case !breaks && !v.Allowed:
				h.fail("audit: %s failed %s: %s", name, p.id, v.Message)
			}
		}
	}
	keys := make([]string, 0, len(reports))
	for key := range reports {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	fmt.Printf("   %d objects audited; per policy and kind, pass and fail:\n", len(h.audits))
	for _, key := range keys {
		fmt.Printf("   | %s | %d | %d |\n", key, reports[key].pass, reports[key].fail)
	}
}

// auditName is an audited object's name with what each run draws anew left
// out: a generated suffix (a Pod's, from its generateName), the
// pod-template-hash of a Deployment's ReplicaSets and their Pods (a
// rollout restart puts the time in the template), and the scheduled time
// in the name of a CronJob's Job and of its Pods.
func auditName(object map[string]any) string {
	metadata := object["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	if generated, _ := metadata["generateName"].(string); generated != "" {
		name = generated + "x"
	}
	labels, _ := metadata["labels"].(map[string]any)
	if hash, _ := labels["pod-template-hash"].(string); hash != "" {
		name = strings.ReplaceAll(name, "-"+hash, "-h")
	}
	return regexp.MustCompile(`-[0-9]{8,}(-|$)`).ReplaceAllString(name, "-t$1")
}

// auditKey tells audited objects apart for the recordings: kind, namespace,
// name as auditName gives it, annotation keys and verdicts.
func auditKey(a *audited) string {
	request := a.review["request"].(map[string]any)
	object := request["object"].(map[string]any)
	text, _ := json.Marshal(struct {
		Kind, Namespace, Name string
		Keys                  []string
		Verdicts              map[string]verdict
	}{object["kind"].(string), fmt.Sprint(request["namespace"]), auditName(object), annotationKeys(object), a.verdicts})
	return string(text)
}

// writeAudits writes each distinct object that the set's webhooks audited
// under its directory's audit/ as <kind>-<namespace>-<name>.json, and
// audit/index.json with every policy's verdict on each; with --compare it
// holds the committed ones to this run instead.
func (h *harness) writeAudits(of set, dir string) error {
	chosen := map[string]*audited{}
	count := 0
	for _, a := range h.audits {
		if _, ours := a.verdicts[of.policies[0].id]; !ours {
			continue
		}
		count++
		key := auditKey(a)
		// Of equal objects, keep the first by name: reruns pick alike.
		if chosen[key] == nil || objectName(a) < objectName(chosen[key]) {
			chosen[key] = a
		}
	}
	dir = filepath.Join(dir, "audit")
	if h.compare {
		recorded, err := readRecorded(dir, func(review map[string]any, verdicts map[string]verdict) string {
			return auditKey(&audited{review: review, verdicts: verdicts})
		})
		if err != nil {
			return fmt.Errorf("no audit recorded for %s: %w", h.release, err)
		}
		holdToRecorded(h, recorded, chosen, "the audit met an object that no recording holds", "the audit no longer meets the recorded")
		fmt.Printf("   %d distinct audited objects compared with %s\n", len(chosen), dir)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keys := make([]string, 0, len(chosen))
	for key := range chosen {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var recordings []recording
	for _, key := range keys {
		a := chosen[key]
		object := a.review["request"].(map[string]any)["object"].(map[string]any)
		namespace, _ := object["metadata"].(map[string]any)["namespace"].(string)
		stem := strings.ToLower(fmt.Sprintf("%s-%s-%s", object["kind"], namespace, auditName(object)))
		recordings = append(recordings, recording{stem, a.review, a.verdicts})
	}
	if err := writeRecorded(dir, recordings, map[string]any{
		"comment": "Written by cluster/run, never by hand: each distinct object the cluster held after the scenarios, as Kubewarden's audit scanner sends it, and each policy's verdict.",
		"release": h.gitVersion,
	}); err != nil {
		return err
	}
	fmt.Printf("   %d objects audited, %d distinct, written to %s\n", count, len(chosen), dir)
	return nil
}

func objectName(a *audited) string {
	return fmt.Sprint(a.review["request"].(map[string]any)["name"])
}
