package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// sent is an object kubectl read, and what the API server made of it.
type sent struct {
	printed    string // as kubectl's `-o name` prints it: kind.group/name
	kind, name string // the kind lower-cased
	namespace  string // read only where two objects print alike; else ""
	outcome    outcome
	matched    bool
}

// applied is what kubectl did with one file: the objects it sent, in
// order; those of kinds the API server does not serve, and those it would
// not send (a generateName), where it names them; and what it could not
// read, where no object is named.
type applied struct {
	sent, unmapped, generated []*sent
	stopped                   string   // the error at which kubectl stopped reading the file
	unread                    []string // other errors of reading (a List inside a List)
}

// kubectlSplit runs kubectl in the repository, so that it names files as
// check does, and returns its standard output and error apart.
func (h *harness) kubectlSplit(args ...string) (string, string, error) {
	kubectl, err := filepath.Abs(h.binary("kubectl"))
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig=" + h.admin}, args...)...)
	cmd.Dir = h.root
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// 1 is kubectl's for any error, which is what is read here.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		return "", "", fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), nil
}

var (
	// What kubectl logs of each response at -v=6.
	responseLog    = regexp.MustCompile(`"Response" verb="([A-Z]+)" url="([^"]*)" status="(\d+)`)
	mappingError   = regexp.MustCompile(`^resource mapping not found for name: "([^"]*)" namespace: "[^"]*" from "[^"]*": no matches for kind "([^"]*)" in version "([^"]*)"`)
	generatedError = regexp.MustCompile(`^(?:error: )?from (.*): cannot use generate name with apply$`)
	serverError    = regexp.MustCompile(`^(?:error: )?Error from server(?: \([A-Za-z]+\))?: error when creating "[^"]*": (.*)$`)
	invalidError   = regexp.MustCompile(`(?s)^The (\S+) "(.*)" is invalid: ?(.*)$`)
	deniedError    = regexp.MustCompile(`^admission webhook "[^"]*" denied the request: (.*)$`)
)

// The errors of reading kubectl gathers into one, in the file's order.
var readingErrors = []string{
	"resource mapping not found for name:", "error parsing ", `error validating "`,
	`unable to decode "`, "*unstructured.Unstructured is not a list",
}

// applyDry has kubectl apply one file as a server-side dry run, and says
// what became of each object. kubectl reads the whole file first, then
// sends each object, and prints, once it is done, what it could not read
// and then each object the API server refused, in order. A dry run on the
// client first lists what kubectl read, in order, so that each refusal
// goes to its object.
func (h *harness) applyDry(file string) (*applied, error) {
	read, readErr, err := h.kubectlSplit("apply", "--dry-run=client", "--validate=strict", "-o", "name", "-f", file)
	if err != nil {
		return nil, err
	}
	out, errOut, err := h.kubectlSplit("apply", "--dry-run=server", "--validate=strict", "-o", "name", "-f", file)
	if err != nil {
		return nil, err
	}
	a := &applied{}
	twice := false
	seen := map[string]bool{}
	for _, line := range outputLines(read) {
		kind, name, _ := strings.Cut(line, "/")
		kind, _, _ = strings.Cut(kind, ".")
		a.sent = append(a.sent, &sent{printed: line, kind: kind, name: name})
		twice = twice || seen[line]
		seen[line] = true
	}
	generated := 0
	for _, entry := range errorEntries(readErr) {
		if generatedError.MatchString(entry) {
			generated++
		}
	}
	// The objects the API server took, in order; each other has its
	// error at the end of what kubectl printed. -o name leaves the
	// namespace out: where two objects print alike, kubectl's log of its
	// requests says which it was.
	took := outputLines(out)
	if twice {
		if err := h.namespaces(file, a); err != nil {
			return nil, err
		}
	}
	refusals := 0
	for _, s := range a.sent {
		if s.outcome.class == "" && !twice && len(took) > 0 && took[0] == s.printed {
			s.outcome = outcome{class: accepted}
		}
		switch {
		case s.outcome.class == accepted && len(took) > 0 && took[0] == s.printed:
			took = took[1:]
		case s.outcome.class == accepted:
			return nil, fmt.Errorf("the API server took %s, which kubectl did not print: %s", s.printed, out)
		default:
			refusals++
		}
	}
	if len(took) > 0 {
		return nil, fmt.Errorf("the API server took %v, which the client's dry run did not list", took)
	}
	entries := errorEntries(errOut)
	count := refusals + generated
	if count > len(entries) {
		return nil, fmt.Errorf("%d objects refused, and kubectl printed only: %s", count, errOut)
	}
	reading := entries[:len(entries)-count]
	refusal := 0
	for _, entry := range entries[len(entries)-count:] {
		if m := generatedError.FindStringSubmatch(entry); m != nil {
			a.generated = append(a.generated, &sent{name: m[1], outcome: outcome{refused, generateName}})
			continue
		}
		var message string
		if m := serverError.FindStringSubmatch(entry); m != nil {
			message = m[1]
		} else if m := invalidError.FindStringSubmatch(entry); m != nil {
			message = fmt.Sprintf("%s %q is invalid: %s", m[1], m[2], strings.ReplaceAll(m[3], "\n", " "))
		} else {
			return nil, fmt.Errorf("cannot tell which object kubectl's error is of: %s\nall it printed: %s", entry, errOut)
		}
		for refusal < len(a.sent) && a.sent[refusal].outcome.class != "" {
			refusal++
		}
		if refusal == len(a.sent) {
			return nil, fmt.Errorf("more errors than refused objects: %s", errOut)
		}
		if d := deniedError.FindStringSubmatch(message); d != nil {
			a.sent[refusal].outcome = outcome{rejected, d[1]}
		} else {
			a.sent[refusal].outcome = outcome{refused, message}
		}
	}
	// What kubectl could not read, one error after another: an object of
	// a kind the API server does not serve, one it cannot decode, a List
	// inside a List, and the document where it stopped reading the file.
	blob := strings.TrimPrefix(strings.Join(reading, "\n"), "error: ")
	blob = strings.TrimSuffix(strings.TrimPrefix(blob, "["), "]")
	if blob == "no objects passed to apply" {
		blob = ""
	}
	var starts []int
	for i := range blob {
		for _, prefix := range readingErrors {
			if strings.HasPrefix(blob[i:], prefix) && (i == 0 || strings.HasSuffix(blob[:i], ", ") || strings.HasSuffix(blob[:i], "\n")) {
				starts = append(starts, i)
			}
		}
	}
	if len(starts) == 0 || starts[0] != 0 {
		starts = append([]int{0}, starts...)
	}
	for n, start := range starts {
		end := len(blob)
		if n+1 < len(starts) {
			end = starts[n+1]
		}
		piece := strings.TrimSuffix(strings.TrimSpace(blob[start:end]), ",")
		switch m := mappingError.FindStringSubmatch(piece); {
		case piece == "":
		case m != nil:
			a.unmapped = append(a.unmapped, &sent{kind: strings.ToLower(m[2]), name: m[1],
				outcome: outcome{refused, fmt.Sprintf("no matches for kind %q in version %q", m[2], m[3])}})
		case strings.HasPrefix(piece, "error parsing ") || strings.HasPrefix(piece, "error validating "):
			a.stopped = piece
		default:
			a.unread = append(a.unread, piece)
		}
	}
	return a, nil
}

// namespaces reads, from kubectl's log of a server-side dry run (-v=6),
// the namespace of each object it sent, in order, and whether the API
// server took it: one creation (or, of what exists, one patch) each.
func (h *harness) namespaces(file string, a *applied) error {
	// kubectl logs to its standard error.
	_, log, err := h.kubectlSplit("apply", "--dry-run=server", "--validate=strict", "-o", "name", "-v=6", "-f", file)
	if err != nil {
		return err
	}
	sends := 0
	for _, m := range responseLog.FindAllStringSubmatch(log, -1) {
		if (m[1] != "POST" && m[1] != "PATCH") || !strings.Contains(m[2], "dryRun=All") {
			continue
		}
		if sends == len(a.sent) {
			return fmt.Errorf("kubectl sent more than the %d objects it read", len(a.sent))
		}
		a.sent[sends].namespace = namespaceOf(m[2])
		if strings.HasPrefix(m[3], "2") {
			a.sent[sends].outcome = outcome{class: accepted}
		}
		sends++
	}
	if sends != len(a.sent) {
		return fmt.Errorf("kubectl read %d objects and logged sending %d", len(a.sent), sends)
	}
	return nil
}

// namespaceOf is the namespace in a request's address, or "".
func namespaceOf(url string) string {
	path, _, _ := strings.Cut(url, "?")
	parts := strings.Split(path, "/")
	for i, part := range parts {
		// api/v1/namespaces/NS/RESOURCE or apis/GROUP/VERSION/namespaces/NS/RESOURCE:
		// a namespace holds what comes after it (a Namespace's own
		// address ends at its name).
		if part == "namespaces" && i+2 < len(parts) && (i >= 2 && (parts[i-2] == "api" || (i >= 3 && parts[i-3] == "apis"))) {
			return parts[i+1]
		}
	}
	return ""
}

// outputLines are the names kubectl printed, one a line (a name may hold a
// space, which the API server refuses).
func outputLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// errorEntries are the errors kubectl printed on its standard error, one
// an entry (an invalid object's causes are lines of their own), without
// the API server's warnings, which it prints as they come.
func errorEntries(text string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case line == "" || strings.HasPrefix(line, "Warning: "):
		case strings.HasPrefix(line, "* ") && len(out) > 0:
			out[len(out)-1] += "\n" + line
		default:
			out = append(out, line)
		}
	}
	return out
}
