package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// verdict is one policy's answer to one review, as the webhook gave it: a
// group's rejection names each member that rejected in its causes.
type verdict struct {
	Allowed bool    `json:"allowed"`
	Message string  `json:"message,omitempty"`
	Causes  []cause `json:"causes,omitempty"`
}

type cause struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// readAnswer reads the verdict of an AdmissionReview's response.
func readAnswer(text []byte) (verdict, error) {
	var answer struct {
		Response struct {
			Allowed bool `json:"allowed"`
			Status  struct {
				Message string `json:"message"`
				Details struct {
					Causes []cause `json:"causes"`
				} `json:"details"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(text, &answer); err != nil {
		return verdict{}, err
	}
	status := answer.Response.Status
	return verdict{answer.Response.Allowed, status.Message, status.Details.Causes}, nil
}

// recordedSoFar is how much each webhook has recorded: where the reviews
// of the next step begin.
func (h *harness) recordedSoFar() map[string]int64 {
	offsets := map[string]int64{}
	for _, path := range h.webhooks {
		if info, err := os.Stat(path); err == nil {
			offsets[path] = info.Size()
		}
	}
	return offsets
}

// sendersSince names the senders of the requests every webhook received
// after offsets (the harness's dry runs left out).
func (h *harness) sendersSince(offsets map[string]int64) (map[string]bool, error) {
	senders := map[string]bool{}
	for _, path := range h.webhooks {
		err := eachReview(path, offsets[path], func(request map[string]any, _ json.RawMessage) {
			if user, _ := request["userInfo"].(map[string]any)["username"].(string); user != "" {
				senders[user] = true
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return senders, nil
}

// eachReview hands each review a webhook recorded from offset on, with its
// answer, to do; dry runs (the harness's own probes) are left out.
func eachReview(path string, offset int64, do func(request map[string]any, response json.RawMessage)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	if _, err := file.Seek(offset, 0); err != nil {
		return err
	}
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		var line struct {
			Review   map[string]any  `json:"review"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		request, _ := line.Review["request"].(map[string]any)
		if request == nil || request["dryRun"] == true {
			continue
		}
		do(request, line.Response)
	}
	return scanner.Err()
}

type received struct {
	review   map[string]any
	verdicts map[string]verdict
	order    int // when the webhooks first received it
}

// readReviews gathers each review that the webhooks of a set received and
// each one's answer to it. The API server gives each call of each webhook a
// uid of its own, so the reviews of one request are matched by the rest of
// their request.
func (h *harness) readReviews(of set) (map[string]*received, error) {
	reviews := map[string]*received{}
	for _, p := range of.policies {
		err := eachReview(h.webhooks[p.id], 0, func(request map[string]any, response json.RawMessage) {
			// The API server names a sender in every request: one with none
			// is the audit step's, which keeps its own.
			if user, _ := request["userInfo"].(map[string]any)["username"].(string); user == "" {
				return
			}
			v, err := readAnswer(response)
			if err != nil {
				// The webhook answered with an error, which the API server
				// turns into a refusal.
				v.Message = "webhook error: " + string(response)
			}
			same := map[string]any{}
			for field, value := range request {
				if field != "uid" {
					same[field] = value
				}
			}
			text, _ := json.Marshal(same)
			if reviews[string(text)] == nil {
				review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
				reviews[string(text)] = &received{review: review, verdicts: map[string]verdict{}, order: len(reviews)}
			}
			reviews[string(text)].verdicts[p.id] = v
		})
		if err != nil {
			return nil, err
		}
	}
	return reviews, nil
}

// distinct is what tells two reviews apart for the tests: who sent what
// kind of request, with which annotation keys, and what each policy said.
type distinct struct {
	Kind, Operation, User, Namespace string
	Keys, OldKeys                    []string
	Verdicts                         map[string]verdict
}

func describe(r *received) distinct {
	request := r.review["request"].(map[string]any)
	user, _ := request["userInfo"].(map[string]any)["username"].(string)
	kind, _ := request["kind"].(map[string]any)["kind"].(string)
	namespace, _ := request["namespace"].(string)
	operation, _ := request["operation"].(string)
	return distinct{
		Kind: kind, Operation: operation, User: sender(user), Namespace: namespace,
		Keys: annotationKeys(request["object"]), OldKeys: annotationKeys(request["oldObject"]),
		Verdicts: r.verdicts,
	}
}

// compareRecorded holds the committed recordings to this run: the same
// distinct requests, each with the same verdicts, or a failure naming what
// differs (then rerun cluster/run to record anew, and read the diff).
func (h *harness) compareRecorded(dir string, chosen map[string]*received, header map[string]any) error {
	recorded, err := readRecorded(dir, func(review map[string]any, verdicts map[string]verdict) string {
		return describe(&received{review: review, verdicts: verdicts}).key()
	})
	if err != nil {
		return fmt.Errorf("nothing recorded for %s: %w", h.release, err)
	}
	// The settings and the scenarios as this run has them.
	text, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return err
	}
	var index map[string]any
	if err := json.Unmarshal(text, &index); err != nil {
		return err
	}
	for _, field := range []string{"settings", "scenarios"} {
		want, _ := json.Marshal(header[field])
		got, _ := json.Marshal(index[field])
		if string(want) != string(got) {
			h.fail("%s: index.json's %s are not this run's: %s, not %s", dir, field, got, want)
		}
	}
	holdToRecorded(h, recorded, chosen, "the cluster sent a request that no recording holds", "the cluster no longer sends")
	fmt.Printf("   %d distinct requests compared with %s\n", len(chosen), dir)
	return nil
}

// readRecorded reads dir's index.json and each review it names, and keys
// each file by what tells it apart (keyOf).
func readRecorded(dir string, keyOf func(map[string]any, map[string]verdict) string) (map[string]string, error) {
	text, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	var index struct {
		Verdicts map[string]map[string]verdict `json:"verdicts"`
	}
	if err := json.Unmarshal(text, &index); err != nil {
		return nil, err
	}
	recorded := map[string]string{}
	for file, verdicts := range index.Verdicts {
		var review map[string]any
		text, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(text, &review); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		recorded[keyOf(review, verdicts)] = file
	}
	return recorded, nil
}

// holdToRecorded fails on each key this run met (ran) that no recording
// holds (met), and on each recording this run did not meet (gone).
func holdToRecorded[T any](h *harness, recorded map[string]string, ran map[string]T, met, gone string) {
	for key := range ran {
		if _, ok := recorded[key]; !ok {
			h.fail("%s: %s", met, key)
		}
	}
	for key, file := range recorded {
		if _, ok := ran[key]; !ok {
			h.fail("%s %s: %s", gone, file, key)
		}
	}
}

func (d distinct) key() string {
	text, _ := json.Marshal(d)
	return string(text)
}

func annotationKeys(object any) []string {
	o, _ := object.(map[string]any)
	metadata, _ := o["metadata"].(map[string]any)
	annotations, _ := metadata["annotations"].(map[string]any)
	keys := []string{}
	for key := range annotations {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// sender names a request's user as the file names do: a controller by its
// service account, any node as "node".
func sender(username string) string {
	switch {
	case strings.HasPrefix(username, "system:serviceaccount:kube-system:"):
		return strings.TrimPrefix(username, "system:serviceaccount:kube-system:")
	case strings.HasPrefix(username, "system:node:"):
		return "node"
	default:
		return regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.TrimPrefix(strings.ToLower(username), "system:"), "-")
	}
}

// writeRecordings writes each distinct review under
// test_data/cluster/recorded/<release>/ as <kind>-<operation>-<user>.json,
// with index.json: the settings, every policy's verdict on each, and the
// scenarios with the senders they bring; a set of its own (the group) in a
// directory of its own beneath. With --compare it holds the committed ones
// to this run instead.
func (h *harness) writeRecordings() error {
	if h.external != "" || (!h.record && !h.compare) {
		fmt.Println("   not recorded (an external webhook, or --record=false)")
		return nil
	}
	root := filepath.Join(h.root, "test_data/cluster/recorded", h.release)
	if !h.compare {
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	for _, s := range sets {
		if err := h.writeSet(s, filepath.Join(root, s.dir)); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) writeSet(of set, dir string) error {
	reviews, err := h.readReviews(of)
	if err != nil {
		return err
	}
	chosen := map[string]*received{}
	for _, r := range reviews {
		request := r.review["request"].(map[string]any)
		if len(r.verdicts) != len(of.policies) {
			h.fail("review %s reached %d of the %d webhooks", request["uid"], len(r.verdicts), len(of.policies))
		}
		key := describe(r).key()
		// Of equal reviews, keep the first received: the scenarios run in
		// their order, so reruns pick the same object (uids are drawn anew
		// each run, and picking by them flipped between equal objects).
		if chosen[key] == nil || r.order < chosen[key].order {
			chosen[key] = r
		}
	}
	keys := make([]string, 0, len(chosen))
	for key := range chosen {
		keys = append(keys, key)
	}
	sort.Strings(keys)

	header := map[string]any{
		"comment": "Written by cluster/run, never by hand: the distinct AdmissionReviews a real control plane sent the policy's webhooks, and each policy's verdict.",
		"release": h.gitVersion,
	}
	settings := map[string]any{}
	for _, p := range of.policies {
		if p.manifest != "" {
			var manifest map[string]any
			if err := h.readYAML(p.manifest, &manifest); err != nil {
				return err
			}
			settings[p.id] = manifest
		} else {
			settings[p.id] = json.RawMessage(p.settings)
		}
	}
	header["settings"] = settings
	if of.dir == "" {
		// The scenarios, each with the senders it brings; the Rust tests
		// hold the recordings to them.
		var scenarios []scenario
		for _, step := range h.scenarios() {
			if len(step.Senders) > 0 {
				scenarios = append(scenarios, step)
			}
		}
		header["scenarios"] = scenarios
	}
	if h.compare {
		if err := h.compareRecorded(dir, chosen, header); err != nil {
			return err
		}
		return h.writeAudits(of, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var recordings []recording
	for _, key := range keys {
		r := chosen[key]
		d := describe(r)
		stem := strings.ToLower(fmt.Sprintf("%s-%s-%s", d.Kind, d.Operation, d.User))
		recordings = append(recordings, recording{stem, r.review, r.verdicts})
	}
	if err := writeRecorded(dir, recordings, header); err != nil {
		return err
	}
	fmt.Printf("   %d reviews received, %d distinct, written to %s\n", len(reviews), len(keys), dir)
	h.summarize(of, chosen, keys)
	return h.writeAudits(of, dir)
}

// recording is one review to write, named after its stem.
type recording struct {
	stem     string
	review   map[string]any
	verdicts map[string]verdict
}

// writeRecorded writes each review into dir as <stem>.json (<stem>-2.json
// for the second of a stem, and so on), in the order given, and index.json:
// header, with each file's verdicts under "verdicts".
func writeRecorded(dir string, recordings []recording, header map[string]any) error {
	index := map[string]any{}
	stems := map[string]int{}
	for _, r := range recordings {
		stems[r.stem]++
		file := r.stem + ".json"
		if stems[r.stem] > 1 {
			file = fmt.Sprintf("%s-%d.json", r.stem, stems[r.stem])
		}
		text, err := json.MarshalIndent(r.review, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, file), append(text, '\n'), 0o644); err != nil {
			return err
		}
		index[file] = r.verdicts
	}
	header["verdicts"] = index
	text, err := json.MarshalIndent(header, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), append(text, '\n'), 0o644)
}

// summarize prints each distinct request with its verdicts, for the run's
// log and the closing notes.
func (h *harness) summarize(of set, chosen map[string]*received, keys []string) {
	for _, key := range keys {
		r := chosen[key]
		request := r.review["request"].(map[string]any)
		user, _ := request["userInfo"].(map[string]any)["username"].(string)
		kind, _ := request["kind"].(map[string]any)["kind"].(string)
		var said []string
		for _, p := range of.policies {
			v := r.verdicts[p.id]
			word := "accept"
			if !v.Allowed {
				word = "REJECT"
			}
			said = append(said, p.id+"="+word)
		}
		fmt.Printf("   | %s | %s | %s | %s | %s |\n", kind, request["operation"], user,
			strings.Join(annotationKeys(request["object"]), " "), strings.Join(said, " "))
	}
}
