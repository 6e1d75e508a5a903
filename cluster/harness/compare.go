package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

// compared is one object or document with both sides' outcomes, and the
// difference that explains them, if they differ.
type compared struct {
	file, source, object string
	check, server        outcome
	difference           string // "" where they agree; a row's id; unnamed
}

const unnamed = "UNNAMED"

// difference is a row of differences.tsv: a way in which check and the API
// server may differ by design, and how to tell it.
type difference struct {
	id, why string
	is      func(c compared, f fileFacts) bool
}

// fileFacts is what a row may need to know of the file.
type fileFacts struct {
	text    string
	applied *applied
}

//go:embed differences.tsv
var differencesTSV string

// The tests of each row, by id.
var differenceTests = map[string]func(c compared, f fileFacts) bool{
	"generate-name": func(c compared, f fileFacts) bool {
		return judged(c.check) && c.server.message == generateName
	},
	"no-crd": func(c compared, f fileFacts) bool {
		m := unservedKind.FindStringSubmatch(c.server.message)
		return judged(c.check) && m != nil && customGroup(m[1])
	},
	"crd-schema": func(c compared, f fileFacts) bool {
		return judged(c.check) && c.server.class == refused && crdSchemaRefusal(c.server.message)
	},
	"duplicate-key": func(c compared, f fileFacts) bool {
		// The API server takes the last value, then its webhook judges it.
		return c.check.class == refused && strings.Contains(c.check.message, "is given twice") &&
			judged(c.server)
	},
	"list-in-list": func(c compared, f fileFacts) bool {
		inList := false
		for _, u := range f.applied.unread {
			inList = inList || strings.Contains(u, "is not a list")
		}
		return c.server.class == unread && strings.Contains(c.source, "(List item ") && inList
	},
	"content-on-marker": func(c compared, f fileFacts) bool {
		return judged(c.check) && strings.Contains(c.server.message, "invalid Yaml document separator: ") &&
			!crOnly(f.text)
	},
	"after-json": func(c compared, f fileFacts) bool {
		return jsonFirst(f.text) && (crOnly(f.text) || strings.Contains(c.server.message, ": json: "))
	},
	"bom-inside": func(c compared, f fileFacts) bool {
		return bomInside(f.text)
	},
	"cr-only": func(c compared, f fileFacts) bool {
		return crOnly(f.text)
	},
	"reads-on": func(c compared, f fileFacts) bool {
		return c.server.class == unread && f.applied.stopped != ""
	},
}

// generateName is kubectl apply's refusal of an object without a name.
const generateName = "cannot use generate name with apply"

var unservedKind = regexp.MustCompile(`^no matches for kind "[^"]*" in version "([^"]*)/[^"/]*"$`)

// judged: check judged the object, and accepted or rejected it.
func judged(o outcome) bool {
	return o.class == accepted || o.class == rejected
}

// customGroup: an API group the pinned release does not build in (a custom
// resource's), by client-go's scheme of that release: gateway-api's
// `gateway.networking.k8s.io` is one, though it lies under `k8s.io`.
func customGroup(group string) bool {
	return group != "" && !scheme.Scheme.IsGroupRegistered(group)
}

// invalid is the API server's refusal of an object it validated, as the
// oracle keeps it (`Widget "w" is invalid: spec.size: Invalid value: ...`;
// the kind qualified by its group where the message comes whole).
var invalid = regexp.MustCompile(`^(\S+) "[^"]*" is invalid: `)

// crdSchemaRefusal: a refusal by a custom resource's schema, which check
// does not know: the API server found invalid an object of a kind no
// group of the pinned release has (or of a custom group, where the
// message names it), or refused a field it does not know (`strict decoding
// error`; check refuses such a field of Kubernetes' own kinds itself, so
// an object it judged and the server refused so is a custom resource).
func crdSchemaRefusal(message string) bool {
	if m := invalid.FindStringSubmatch(message); m != nil {
		kind, group, qualified := strings.Cut(m[1], ".")
		if qualified {
			return customGroup(group)
		}
		return customKind(kind)
	}
	return strings.Contains(message, "strict decoding error: unknown field")
}

// customKind: a kind no group of the pinned release's client-go scheme has.
func customKind(kind string) bool {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind {
			return false
		}
	}
	return true
}

// crOnly: lines end with CR alone.
func crOnly(text string) bool {
	return strings.Contains(text, "\r") && !strings.Contains(text, "\n")
}

// jsonFirst: the stream starts as JSON, which kubectl then reads on as JSON.
func jsonFirst(text string) bool {
	text = strings.TrimLeft(strings.TrimPrefix(text, "\ufeff"), " \t\r\n")
	return strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[")
}

// bomInside: a byte-order mark where kubectl's reader keeps it, after the
// stream's leading `---` or before a `---` or a JSON value.
func bomInside(text string) bool {
	rest := strings.TrimPrefix(text, "\ufeff")
	for _, start := range []string{"---\n\ufeff", "---\r\n\ufeff", "---\r\ufeff"} {
		if strings.HasPrefix(rest, start) {
			return true
		}
	}
	return strings.Contains(text, "\ufeff---") || strings.Contains(text, "\ufeff{")
}

// differences reads the table, each row with its test: a row without a
// test, or a test without a row, is the harness's own error.
func differences() ([]difference, error) {
	var out []difference
	lines := strings.Split(strings.TrimSuffix(differencesTSV, "\n"), "\n")
	if len(lines) == 0 || lines[0] != "id\twhy" {
		return nil, fmt.Errorf("differences.tsv: the first line is not the header id<TAB>why")
	}
	seen := map[string]bool{}
	for n, line := range lines[1:] {
		id, why, ok := strings.Cut(line, "\t")
		if !ok || id == "" || why == "" || strings.Contains(why, "\t") {
			return nil, fmt.Errorf("differences.tsv:%d: not id<TAB>why", n+2)
		}
		test := differenceTests[id]
		if test == nil {
			return nil, fmt.Errorf("differences.tsv: no test for %q in oracle.go", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("differences.tsv: %q twice", id)
		}
		seen[id] = true
		out = append(out, difference{id, why, test})
	}
	for id := range differenceTests {
		if !seen[id] {
			return nil, fmt.Errorf("oracle.go tests %q, which differences.tsv lacks", id)
		}
	}
	return out, nil
}

// absent is check's side where it said nothing of what kubectl sent.
const absent = "absent"

// candidate is something kubectl did with the file that no object of
// check's names: an object it sent under another name or none check read,
// an object of a kind not served, a generateName refused, or an error of
// reading.
type candidate struct {
	what    string // the object as kubectl names it, or the error
	outcome outcome
	paired  bool
	// An error of reading that kubectl prints once for all the documents
	// it names alike (it drops an error equal to one before): it may
	// stand for more than one.
	shared bool
}

// compareFile holds check's rows on one file to kubectl's. Each object
// check names goes with the object kubectl named alike (sent, of a kind
// not served, or with a generateName). The documents check refused or
// skipped have no name: each goes with what kubectl sent between the same
// two objects, in order (segment), or with what kubectl could not read,
// which names no place (choose); the error at which kubectl stopped, only
// with a row after the last object it sent. Whatever is left on either
// side is a row of its own.
func compareFile(file string, entries []*checked, a *applied, facts fileFacts, rows []difference) []compared {
	var out []compared
	// The place of each object kubectl sent that check names: the rows
	// between two such places are one segment on both sides.
	segment := make([]int, len(entries))
	paired := make([]bool, len(entries))
	last := -1
	for i, e := range entries {
		segment[i] = last
		if e.object == "" {
			continue
		}
		kind := strings.ToLower(e.kind)
		for j, s := range a.sent {
			if !s.matched && s.kind == kind && s.name == e.name && (s.namespace == "" || s.namespace == e.namespace) {
				s.matched, paired[i], last = true, true, j
				segment[i] = -2 // an anchor
				out = append(out, compared{file, e.source, e.object, e.outcome, s.outcome, ""})
				break
			}
		}
		if paired[i] {
			continue
		}
		for _, s := range a.unmapped {
			if !s.matched && s.kind == kind && s.name == e.name {
				s.matched, paired[i] = true, true
				out = append(out, compared{file, e.source, e.object, e.outcome, s.outcome, ""})
				break
			}
		}
		if paired[i] {
			continue
		}
		for _, s := range a.generated {
			prefix := s.name
			if len(prefix) > 58 {
				// The API server cuts a generateName there.
				prefix = prefix[:58]
			}
			if !s.matched && e.name == prefix+generatedSuffix {
				s.matched, paired[i] = true, true
				out = append(out, compared{file, e.source, e.object, e.outcome, s.outcome, ""})
				break
			}
		}
	}
	// What kubectl sent that check does not name, by segment.
	bySegment := map[int][]*candidate{}
	previous := -1
	for j, s := range a.sent {
		if s.matched {
			previous = j
			continue
		}
		bySegment[previous] = append(bySegment[previous], &candidate{what: s.printed, outcome: s.outcome})
	}
	var floating, shared []*candidate
	for _, s := range a.unmapped {
		if !s.matched {
			floating = append(floating, &candidate{what: s.kind + " " + s.name, outcome: s.outcome})
		}
	}
	for _, s := range a.generated {
		if !s.matched {
			floating = append(floating, &candidate{what: "generateName " + s.name, outcome: s.outcome})
		}
	}
	for _, u := range a.unread {
		shared = append(shared, &candidate{what: "kubectl: " + u, outcome: outcome{refused, u}, shared: true})
	}
	var stop *candidate
	if a.stopped != "" {
		stop = &candidate{what: "kubectl stopped here", outcome: outcome{refused, a.stopped}}
	}
	lastSegment := -1
	for j, s := range a.sent {
		if s.matched {
			lastSegment = j
		}
	}
	// Segment by segment, in the file's order: in each, check's rows left
	// without an object of kubectl's, and what kubectl sent there that
	// check does not name.
	groups := map[int][]int{}
	keys := []int{}
	for i := range entries {
		if paired[i] {
			continue
		}
		if _, ok := groups[segment[i]]; !ok {
			keys = append(keys, segment[i])
		}
		groups[segment[i]] = append(groups[segment[i]], i)
	}
	for key := range bySegment {
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
	}
	sort.Ints(keys)
	p := pairing{facts: facts, rows: rows, floating: floating, shared: shared}
	for _, key := range keys {
		p.stop = nil
		if key == lastSegment {
			p.stop = stop
		}
		var open []compared
		for _, i := range groups[key] {
			e := entries[i]
			open = append(open, compared{file, e.source, e.object, e.outcome, outcome{class: unread}, ""})
		}
		out = append(out, p.segment(open, bySegment[key])...)
	}
	var left []*candidate
	for _, key := range keys {
		left = append(left, bySegment[key]...)
	}
	left = append(append(left, floating...), shared...)
	if stop != nil {
		left = append(left, stop)
	}
	for _, k := range left {
		if !k.paired {
			out = append(out, compared{file, file, k.what, outcome{class: absent}, k.outcome, ""})
		}
	}
	for i := range out {
		if !agree(out[i]) {
			out[i].difference = explained(out[i], facts, rows)
			if out[i].difference == "" {
				out[i].difference = unnamed
			}
		}
	}
	return out
}

// pairing pairs check's rows with what kubectl did, segment by segment.
type pairing struct {
	facts            fileFacts
	rows             []difference
	floating, shared []*candidate
	stop             *candidate // in the last segment only
}

// score is 2 where both sides agree, 1 where a row explains the difference.
func (p *pairing) score(c compared) int {
	switch {
	case agree(c):
		return 2
	case explained(c, p.facts, p.rows) != "":
		return 1
	}
	return 0
}

// segment pairs the rows of one segment. kubectl's objects there go, in
// their order, each with one of the documents check refused there (each
// is one of them, where there are enough): of all the ways, the one that
// leaves fewest of kubectl's objects alone, then the one where most pairs
// agree or are explained. The other rows go with what kubectl could not
// read, which names no place (choose).
func (p *pairing) segment(open []compared, here []*candidate) []compared {
	assign := make([]int, len(open))
	best, bestScore, bestCount := make([]int, len(open)), -1, -1
	var try func(i, next int)
	try = func(i, next int) {
		if i == len(open) {
			score, count := p.simulate(open, here, assign)
			if count > bestCount || (count == bestCount && score > bestScore) {
				copy(best, assign)
				bestScore, bestCount = score, count
			}
			return
		}
		assign[i] = -1
		try(i+1, next)
		if open[i].object == "" {
			for k := next; k < len(here); k++ {
				assign[i] = k
				try(i+1, k+1)
			}
		}
		assign[i] = -1
	}
	if len(open) <= 8 && len(here) <= 8 {
		try(0, 0)
	} else {
		// Too many ways to weigh: in order, one for one.
		k := 0
		for i := range open {
			best[i] = -1
			if open[i].object == "" && k < len(here) {
				best[i] = k
				k++
			}
		}
	}
	for i := range open {
		if k := best[i]; k >= 0 {
			open[i].server = here[k].outcome
			here[k].paired = true
		} else {
			p.choose(&open[i])
		}
	}
	return open
}

// simulate scores a way of pairing a segment, the rest chosen as choose
// would, and counts kubectl's objects paired; it leaves nothing paired.
func (p *pairing) simulate(open []compared, here []*candidate, assign []int) (score, count int) {
	pool := append(append([]*candidate{p.stop}, p.floating...), p.shared...)
	was := make([]bool, len(pool))
	for n, k := range pool {
		if k != nil {
			was[n] = k.paired
		}
	}
	for i, c := range open {
		if k := assign[i]; k >= 0 {
			c.server = here[k].outcome
			score += p.score(c)
			count++
		} else {
			p.choose(&c)
			score += p.score(c)
		}
	}
	for n, k := range pool {
		if k != nil {
			k.paired = was[n]
		}
	}
	return score, count
}

// choose gives a row what kubectl could not read: the first that agrees,
// or that a row explains; else nothing, if a row explains that kubectl
// never sent it; else the first; a shared error a second time last. Only
// a document check refused takes a kind not served or a generateName
// refused (an object check read would have their name).
func (p *pairing) choose(c *compared) {
	var candidates []*candidate
	if c.object == "" {
		candidates = append(candidates, p.floating...)
	}
	if p.stop != nil {
		candidates = append(candidates, p.stop)
	}
	candidates = append(candidates, p.shared...)
	var chosen, first *candidate
	for _, again := range []bool{false, true} {
		for _, k := range candidates {
			if k.paired && !(again && k.shared) {
				continue
			}
			try := *c
			try.server = k.outcome
			if p.score(try) > 0 {
				chosen = k
				break
			}
			if first == nil {
				first = k
			}
		}
		if chosen != nil || explained(*c, p.facts, p.rows) != "" {
			break
		}
	}
	if chosen == nil && explained(*c, p.facts, p.rows) == "" {
		chosen = first
	}
	if chosen != nil {
		chosen.paired = true
		c.server = chosen.outcome
	}
}

// generatedSuffix is what check ends a name made from a generateName with.
const generatedSuffix = "x7k2p"

// agree: both accepted, both rejected with the same message, both refused
// (the wording is each side's own).
func agree(c compared) bool {
	if c.check.class != c.server.class {
		return false
	}
	switch c.check.class {
	case accepted, refused:
		return true
	case rejected:
		return c.check.message == c.server.message
	}
	return false
}

// explained names the first row that explains a difference, or "".
func explained(c compared, facts fileFacts, rows []difference) string {
	for _, row := range rows {
		if row.is(c, facts) {
			return row.id
		}
	}
	return ""
}

// holdOracle counts the outcomes, fails on each unnamed difference and on
// each row no difference met.
func (h *harness) holdOracle(all []compared, rows []difference) {
	counts := map[string]int{}
	for _, c := range all {
		switch {
		case c.difference == "":
			counts["agree "+c.check.class]++
		default:
			counts[c.difference]++
		}
	}
	fmt.Printf("   %d objects and documents: %d accepted, %d rejected and %d refused by both\n",
		len(all), counts["agree accepted"], counts["agree rejected"], counts["agree refused"])
	for _, row := range rows {
		fmt.Printf("   | %s | %d |\n", row.id, counts[row.id])
		if counts[row.id] == 0 {
			h.fail("no object met the named difference %s: drop its row from cluster/harness/differences.tsv and docs/check.md, or apply what shows it", row.id)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].file < all[j].file })
	// Every pair, for whoever reads a failure (kept with --keep).
	var table strings.Builder
	table.WriteString("source\tobject\tcheck\tAPI server\tdifference\n")
	for _, c := range all {
		fmt.Fprintf(&table, "%s\t%s\t%q\t%q\t%s\n", c.source, c.object, c.check.String(), c.server.String(), c.difference)
	}
	path := filepath.Join(h.work, "oracle.tsv")
	if err := os.WriteFile(path, []byte(table.String()), 0o644); err != nil {
		h.fail("%v", err)
	}
	fmt.Printf("   each object and document with both outcomes: %s\n", path)
	for _, c := range all {
		if c.difference == unnamed {
			h.fail("check and the API server differ on %s (%s): check %s; the API server %s", c.object, c.source, c.check, c.server)
		}
	}
}
