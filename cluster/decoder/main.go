// Command decoder is the oracle of the differential test of `policy-runner check`:
// it reads manifest files the way `kubectl apply -f FILE` (kubectl v1.37.2, default
// --validate=strict) reads them, and decodes every object the way the API server of
// the same release decodes what kubectl sends it, and prints one JSON line per object
// read and per document or object refused.
//
// Usage: decoder FILE...   ("-" reads standard input)
//
//	decoder -kinds    the kinds the release serves and those it removed (kinds.go)
//	decoder -yaml     documents on standard input, each ended by a NUL byte, each
//	                  turned into JSON as kubectl turns a document it reads (yaml.go)
//	decoder -schema   the fields of those kinds and their types (schema.go)
//
// Every decision is taken by a function of the pinned Kubernetes libraries
// (k8s.io/apimachinery, k8s.io/cli-runtime, k8s.io/kubectl, k8s.io/client-go at
// v0.37.2). What is written here is the glue that the cli-runtime resource.Builder
// keeps unexported: the order of the steps, the error texts it wraps around the
// library errors, and the bookkeeping of lines and list indexes that kubectl does not
// keep. Each step names the code it follows.
//
// Output, one JSON object a line, in the order kubectl reads the objects:
//
//	{"file": ARG, "line": N, "item": [i, ...] or null, "apiVersion": "...", "kind": "...",
//	 "namespace": "...", "name": "...", "refused": null or "error text", "object": {...}}
//
// Exit status: 0 when every argument could be read (refusals are data), 2 on a usage
// error or an unreadable file (then nothing is printed).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	yamlnode "go.yaml.in/yaml/v3"
	"golang.org/x/text/encoding"
	textunicode "golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"
)

// The release the oracle stands for: the API server of k8s.io/kubernetes v1.37.2.
const releaseMajor, releaseMinor = 1, 37

type record struct {
	File       string  `json:"file"`
	Line       int     `json:"line"`
	Item       []int   `json:"item"`
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Namespace  string  `json:"namespace"`
	Name       string  `json:"name"`
	Refused    *string `json:"refused"`
	// The object as kubectl sends it, where it was decoded: what its YAML
	// reads as (YAML 1.1's scalars, keys made strings).
	Object json.RawMessage `json:"object,omitempty"`
}

func main() {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "-schema" {
		if err := printSchema(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "decoder:", err)
			os.Exit(2)
		}
		return
	}
	if len(args) == 1 && args[0] == "-kinds" {
		if err := printKinds(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "decoder:", err)
			os.Exit(2)
		}
		return
	}
	if len(args) == 1 && args[0] == "-yaml" {
		if err := printYAML(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "decoder:", err)
			os.Exit(2)
		}
		return
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: decoder FILE... (- for standard input)")
		os.Exit(2)
	}
	// kubectl checks that every path exists before it reads any; do the same, so that
	// an unreadable argument prints nothing.
	inputs := make([][]byte, len(args))
	stdinUsed := false
	for i, arg := range args {
		var r io.Reader
		if arg == "-" {
			if stdinUsed {
				fmt.Fprintln(os.Stderr, "decoder: standard input cannot be used for multiple arguments")
				os.Exit(2)
			}
			stdinUsed = true
			r = os.Stdin
		} else {
			f, err := os.Open(arg)
			if err != nil {
				fmt.Fprintln(os.Stderr, "decoder:", err)
				os.Exit(2)
			}
			defer f.Close()
			r = f
		}
		data, err := readLikeFileVisitor(r)
		if err != nil {
			fmt.Fprintf(os.Stderr, "decoder: %s: %v\n", arg, err)
			os.Exit(2)
		}
		inputs[i] = data
	}
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for i, arg := range args {
		source := arg
		if arg == "-" {
			source = "STDIN" // the Source cli-runtime gives standard input
		}
		for _, rec := range readFile(arg, source, inputs[i]) {
			if err := out.Encode(rec); err != nil {
				fmt.Fprintln(os.Stderr, "decoder:", err)
				os.Exit(2)
			}
		}
	}
}

// readLikeFileVisitor reads the bytes as cli-runtime's FileVisitor hands them to its
// StreamVisitor: through the BOM-sniffing UTF-8 decoder (a UTF-8 BOM at the start is
// dropped, a UTF-16 BOM switches to UTF-16, bytes that are not UTF-8 become U+FFFD).
// Lines are counted on these bytes; the decoding neither adds nor removes line breaks.
func readLikeFileVisitor(r io.Reader) ([]byte, error) {
	var dec *encoding.Decoder = textunicode.UTF8.NewDecoder()
	return io.ReadAll(transform.NewReader(r, textunicode.BOMOverride(dec)))
}

// ---------------------------------------------------------------------------------
// Reading one file: cli-runtime v0.37.2 pkg/resource/visitor.go, StreamVisitor.Visit,
// as wrapped by EagerVisitorList (ContinueOnError) and FlattenListVisitor, with the
// mapper of Builder.Unstructured() and the validator kubectl builds for
// --validate=strict (k8s.io/kubectl pkg/cmd/util/factory_client_access.go, Validator).

func readFile(arg, source string, data []byte) []record {
	lines := newLineIndex(data)
	fr := newFramer(data)
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var recs []record
	for {
		ext := runtime.RawExtension{}
		err := dec.Decode(&ext)
		if err == io.EOF {
			return recs
		}
		doc, ferr := fr.next(err == nil)
		if ferr != nil {
			fmt.Fprintf(os.Stderr, "decoder: %s: %v\n", arg, ferr)
		}
		if err != nil {
			// The stream decoder cannot go past a document it cannot read: StreamVisitor
			// returns "error parsing ..." and nothing after it in the file is read.
			msg := fmt.Sprintf("error parsing %s: %v", source, err)
			recs = append(recs, record{File: arg, Line: errorLine(err, doc, lines), Refused: &msg})
			return recs
		}
		raw := bytes.TrimSpace(ext.Raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue // an empty document (only comments, or nothing)
		}
		if doc.ok && !doc.json {
			checkInStep(arg, doc.text, raw)
		}
		tree := parseNode(doc.text)
		line := lines.lineAt(doc.start)
		if tree != nil {
			line = lines.lineAt(doc.start) + tree.Line - 1
		} else if c := firstContent(doc.text); c >= 0 {
			line = lines.lineAt(doc.start + c)
		}
		base := record{File: arg, Line: line}
		fillFromJSON(&base, raw)

		// Client-side validation runs before the document is decoded; an error stops
		// the file ("error validating ..." is returned from StreamVisitor.Visit).
		if err := resource.ValidateSchema(raw, strictValidator); err != nil {
			msg := fmt.Sprintf("error validating %q: %v", source, err)
			base.Refused = &msg
			return append(recs, base)
		}

		// mapper.infoForData: decode, then map the kind; an error here is collected
		// and the next document is read.
		obj, gvk, err := (readDecoder{}).Decode(raw, nil, nil)
		if err != nil {
			msg := fmt.Sprintf("unable to decode %q: %v", source, err)
			base.Refused = &msg
			recs = append(recs, base)
			continue
		}
		fillFromObject(&base, obj)
		if err := restMapping(*gvk); err != nil {
			var nk *meta.NoKindMatchError
			if errors.As(err, &nk) {
				err = fmt.Errorf("resource mapping not found for name: %q namespace: %q from %q: %w\nensure CRDs are installed first",
					base.Name, base.Namespace, source, err)
			} else {
				err = fmt.Errorf("unable to recognize %q: %v", source, err)
			}
			msg := err.Error()
			base.Refused = &msg
			recs = append(recs, base)
			continue
		}

		if !meta.IsListType(obj) {
			base.Refused = applyOne(obj)
			recs = append(recs, base)
			continue
		}
		recs = append(recs, flatten(base, obj, tree, doc.start, lines)...)
	}
}

// flatten follows FlattenListVisitor.Visit: lists found among the items are opened in
// turn (breadth first: their items go to the end of the queue), and the objects that
// are not lists are visited in queue order. An error from ExtractList or DecodeList
// refuses the whole document; an error for one item refuses that item.
func flatten(base record, list runtime.Object, tree *yamlnode.Node, docStart int, lines *lineIndex) []record {
	type entry struct {
		obj  runtime.Object
		path []int
	}
	queue := []entry{{obj: list}}
	var items []entry
	for i := 0; i < len(queue); i++ {
		cur := queue[i]
		if !meta.IsListType(cur.obj) {
			items = append(items, cur)
			continue
		}
		sub, err := meta.ExtractList(cur.obj)
		if err == nil {
			if errs := runtime.DecodeList(sub, readDecoder{}); len(errs) > 0 {
				err = utilerrors.NewAggregate(errs)
			}
		}
		if err != nil {
			msg := err.Error()
			base.Refused = &msg
			return []record{base}
		}
		for j, o := range sub {
			p := append(append([]int{}, cur.path...), j)
			queue = append(queue, entry{obj: o, path: p})
		}
	}
	typer := unstructuredscheme.NewUnstructuredObjectTyper()
	var recs []record
	for _, it := range items {
		rec := record{File: base.File, Line: base.Line, Item: it.path}
		if n := itemNode(tree, it.path); n != nil {
			rec.Line = lines.lineAt(docStart) + n.Line - 1
		}
		fillFromObject(&rec, it.obj)
		// mapper.infoForObject
		kinds, _, err := typer.ObjectKinds(it.obj)
		if err != nil {
			msg := fmt.Errorf("unable to get type info from the object %q: %v", reflect.TypeOf(it.obj), err).Error()
			rec.Refused = &msg
		} else if err := restMapping(kinds[0]); err != nil {
			msg := fmt.Errorf("unable to recognize %v", err).Error()
			rec.Refused = &msg
		} else {
			rec.Refused = applyOne(it.obj)
		}
		recs = append(recs, rec)
	}
	return recs
}

// readDecoder is the decoder of Builder.Unstructured(): the unstructured JSON scheme,
// wrapped as cli-runtime's (unexported) metadataValidatingDecoder wraps it, so that a
// document whose metadata does not decode into ObjectMeta (an annotation that is not
// a string, a name that is a number, ...) is refused when it is read.
type readDecoder struct{}

func (readDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := unstructured.UnstructuredJSONScheme.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	if _, ok := obj.(runtime.Unstructured); !ok {
		return obj, gvk, nil
	}
	var typed struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
	if err := utiljson.Unmarshal(data, &typed); err != nil {
		return obj, gvk, err
	}
	return obj, gvk, nil
}

// ---------------------------------------------------------------------------------
// What the cluster knows: discovery (for kubectl's REST mapping) and the decoding
// the API server does, both from the client-go scheme of the pinned release.

var (
	// strictCodec decodes as the API server does under fieldValidation=Strict (what
	// kubectl sends by default): unknown and duplicate fields are errors
	// (runtime.IsStrictDecodingError), and so are values of the wrong type.
	strictCodec = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

	// served maps each group version the server offers to the kinds of its top-level
	// resources, as discovery lists them.
	served = discovery()

	// groups the client-go scheme knows; a kind in any other group is taken for a
	// custom resource whose CRD is installed.
	builtinGroups = func() map[string]bool {
		g := map[string]bool{}
		for gvk := range scheme.Scheme.AllKnownTypes() {
			g[gvk.Group] = true
		}
		return g
	}()
)

// Kinds in the scheme that carry ObjectMeta but that discovery does not list as
// top-level resources: they exist only as subresources (pods/eviction,
// serviceaccounts/token, */scale, pods/binding is also a top-level "bindings") or are
// internal to the API server. No client library says which kinds discovery lists
// (only the API server's storage registry does), so this short list is written here.
var notTopLevel = map[schema.GroupKind]bool{
	{Group: "", Kind: "RangeAllocation"}:                   true,
	{Group: "", Kind: "PodStatusResult"}:                   true,
	{Group: "autoscaling", Kind: "Scale"}:                  true,
	{Group: "apps", Kind: "Scale"}:                         true,
	{Group: "extensions", Kind: "Scale"}:                   true,
	{Group: "policy", Kind: "Eviction"}:                    true,
	{Group: "authentication.k8s.io", Kind: "TokenRequest"}: true,
}

// lifecycle is implemented by the types of k8s.io/api whose version has a planned
// life (zz_generated.prerelease-lifecycle.go, made by prerelease-lifecycle-gen).
type lifecycleRemoved interface {
	APILifecycleRemoved() (major, minor int)
}
type lifecycleIntroduced interface {
	APILifecycleIntroduced() (major, minor int)
}
type lifecycleReplacement interface {
	APILifecycleReplacement() schema.GroupVersionKind
}

func atOrBefore(major, minor int) bool {
	return major < releaseMajor || (major == releaseMajor && minor <= releaseMinor)
}

// servedAt says whether the server of the pinned release serves the type. It follows
// k8s.io/apiserver v0.37.2 pkg/server/deleted_kinds.go: a kind whose
// APILifecycleRemoved() release is not after the current release is not served
// (ShouldServeForVersion, for a GA binary, without --emulated-version and without the
// "serve removed APIs one more release" switch), nor is a kind introduced after it
// (removeUnintroducedKinds).
func servedAt(obj runtime.Object) bool {
	if r, ok := obj.(lifecycleRemoved); ok && atOrBefore(r.APILifecycleRemoved()) {
		return false
	}
	if i, ok := obj.(lifecycleIntroduced); ok {
		if major, minor := i.APILifecycleIntroduced(); !atOrBefore(major, minor) {
			return false
		}
	}
	return true
}

func discovery() map[schema.GroupVersion]map[string]bool {
	out := map[schema.GroupVersion]map[string]bool{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || notTopLevel[gvk.GroupKind()] {
			continue
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil || meta.IsListType(obj) || !servedAt(obj) {
			continue
		}
		if _, err := meta.Accessor(obj); err != nil {
			continue // options, Status, WatchEvent...: no ObjectMeta, not a resource
		}
		if out[gvk.GroupVersion()] == nil {
			out[gvk.GroupVersion()] = map[string]bool{}
		}
		out[gvk.GroupVersion()][gvk.Kind] = true
	}
	return out
}

// resourceKind returns the kind of the resource discovery lists for gvk (exactly), or "".
func resourceKind(gvk schema.GroupVersionKind) string {
	if served[gvk.GroupVersion()][gvk.Kind] {
		return gvk.Kind
	}
	return ""
}

// restMapping answers as kubectl's discovery REST mapper
// (k8s.io/client-go v0.37.2 restmapper/discovery.go, NewDiscoveryRESTMapper) would for
// the server of the pinned release: for every served group version it maps each
// resource's Kind, the Kind in lower case, Kind+"List", and "List". A kind of a group
// the scheme does not know is taken for an installed custom resource.
func restMapping(gvk schema.GroupVersionKind) error {
	if !builtinGroups[gvk.Group] {
		return nil
	}
	kinds := served[gvk.GroupVersion()]
	if kinds != nil {
		if gvk.Kind == "List" || kinds[gvk.Kind] {
			return nil
		}
		for k := range kinds {
			if gvk.Kind == strings.ToLower(k) || gvk.Kind == k+"List" {
				return nil
			}
		}
	}
	err := error(&meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}})
	if obj, e := scheme.Scheme.New(gvk); e == nil {
		if r, ok := obj.(lifecycleRemoved); ok && atOrBefore(r.APILifecycleRemoved()) {
			major, minor := r.APILifecycleRemoved()
			hint := fmt.Sprintf("%s %s was removed in Kubernetes %d.%d", gvk.GroupVersion(), gvk.Kind, major, minor)
			if rp, ok := obj.(lifecycleReplacement); ok && !rp.APILifecycleReplacement().Empty() {
				repl := rp.APILifecycleReplacement()
				hint += fmt.Sprintf("; use %s", repl.GroupVersion())
				if repl.Kind != gvk.Kind {
					hint += " " + repl.Kind
				}
			}
			err = fmt.Errorf("%w (%s)", err, hint)
		}
	}
	return err
}

// applyOne is what `kubectl apply` does with one object it has read
// (k8s.io/kubectl v0.37.2 pkg/cmd/apply/apply.go, applyOneObject), up to the API
// server decoding the request body. It returns the refusal, or nil.
func applyOne(obj runtime.Object) *string {
	refuse := func(s string) *string { return &s }
	acc, err := meta.Accessor(obj)
	if err != nil {
		return refuse(err.Error())
	}
	if acc.GetName() == "" {
		if g := acc.GetGenerateName(); g != "" {
			return refuse(fmt.Sprintf("from %s: cannot use generate name with apply", g))
		}
		// apply first GETs the object by name; client-go's rest.Request.Name refuses an
		// empty name before any request is sent.
		return refuse("resource name may not be empty")
	}
	if msgs := rest.IsValidPathSegmentName(acc.GetName()); len(msgs) != 0 {
		return refuse(fmt.Sprintf("invalid resource name %q: %v", acc.GetName(), msgs))
	}
	if ns := acc.GetNamespace(); ns != "" {
		if msgs := rest.IsValidPathSegmentName(ns); len(msgs) != 0 {
			return refuse(fmt.Sprintf("invalid namespace %q: %v", ns, msgs))
		}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !builtinGroups[gvk.Group] {
		return nil // a custom resource: no built-in type to decode it into
	}
	// kubectl sends the object as the unstructured scheme encodes it (so a key given
	// twice in the file reaches the server once), and the server decodes it strictly.
	body, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	if err != nil {
		return refuse(err.Error())
	}
	if _, _, err := strictCodec.Decode(body, nil, nil); err != nil {
		// The API server's wording (k8s.io/apiserver endpoints/handlers, transformDecodeError).
		want := resourceKind(gvk)
		if want == "" {
			for k := range served[gvk.GroupVersion()] {
				if strings.ToLower(k) == gvk.Kind || k+"List" == gvk.Kind {
					want = k
				}
			}
		}
		return refuse(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, want, err))
	}
	return nil
}

// ---------------------------------------------------------------------------------
// kubectl's validator for --validate=strict against a server that supports
// server-side field validation (every 1.37 server): validation.NewParamVerifyingSchema
// skips client-side checks for kinds whose PATCH takes the fieldValidation parameter,
// and runs them for the others ("List", typed lists, unknown kinds), after checking
// in every case that the document is an object with string apiVersion and kind.

var strictValidator = validation.NewParamVerifyingSchema(
	validation.ConjunctiveSchema{
		validation.NewSchemaValidation(noOpenAPI{}),
		validation.NoDoubleKeySchema{},
		modelCheck{},
	},
	fieldValidationSupport{},
	metav1.FieldValidationStrict,
)

// fieldValidationSupport stands for the OpenAPI v3 documents of the server: the PATCH
// of every top-level resource (and of installed custom resources) takes
// fieldValidation; "List" never does (cli-runtime query_param_verifier_v3.go).
type fieldValidationSupport struct{}

func (fieldValidationSupport) HasSupport(gvk schema.GroupVersionKind) error {
	if (gvk != schema.GroupVersionKind{Version: "v1", Kind: "List"}) &&
		(!builtinGroups[gvk.Group] || resourceKind(gvk) != "") {
		return nil
	}
	return resource.NewParamUnsupportedError(gvk, resource.QueryParamFieldValidation)
}

// noOpenAPI gives validation.NewSchemaValidation no models: it then checks only what it
// checks without them (a List's items are objects with apiVersion and kind); the
// model check is modelCheck's.
type noOpenAPI struct{}

func (noOpenAPI) OpenAPISchema() (openapi.Resources, error) { return noOpenAPI{}, nil }
func (noOpenAPI) LookupResource(schema.GroupVersionKind) proto.Schema {
	return nil
}
func (noOpenAPI) GetConsumes(schema.GroupVersionKind, string) []string { return nil }

// modelCheck stands for the OpenAPI v2 model validation kubectl runs client-side on
// the kinds that get no server-side field validation: a typed list (ConfigMapList...)
// and each item of a "List" whose kind the server describes. The model is the typed
// Go struct of the scheme, decoded strictly; the error texts are the decoder's, not
// kubectl's "ValidationError(...)" texts.
type modelCheck struct{}

func (modelCheck) ValidateBytes(data []byte) error {
	var doc map[string]interface{}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil // already reported by the schema validation
	}
	check := func(m map[string]interface{}, where string) error {
		av, _ := m["apiVersion"].(string)
		k, _ := m["kind"].(string)
		gv, err := schema.ParseGroupVersion(av)
		if err != nil {
			return nil
		}
		gvk := gv.WithKind(k)
		if !described(gvk) {
			return nil
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if _, _, err := strictCodec.Decode(b, nil, nil); err != nil {
			return fmt.Errorf("%s%s: %v", where, k, err)
		}
		return nil
	}
	av, _ := doc["apiVersion"].(string)
	k, _ := doc["kind"].(string)
	if av == "v1" && k == "List" {
		items, _ := doc["items"].([]interface{})
		var errs []error
		for i, it := range items {
			if m, ok := it.(map[string]interface{}); ok {
				if err := check(m, fmt.Sprintf("List.items[%d] ", i)); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return utilerrors.NewAggregate(errs)
	}
	return check(doc, "")
}

// described says whether the server's OpenAPI has a model for gvk: a served kind of a
// built-in group, lists included.
func described(gvk schema.GroupVersionKind) bool {
	if !builtinGroups[gvk.Group] || !scheme.Scheme.Recognizes(gvk) {
		return false
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil || !servedAt(obj) {
		return false
	}
	return served[gvk.GroupVersion()] != nil
}

// ---------------------------------------------------------------------------------
// Lines. kubectl keeps no positions; the framer walks the same bytes with the same
// framing as the stream decoder (yaml.NewYAMLOrJSONDecoder: JSON values while the
// stream looks like JSON, else the documents of yaml.NewYAMLReader) to know where each
// document lies, and a YAML node parser gives the lines inside a document.

type lineIndex struct{ starts []int }

// newLineIndex counts lines as YAML does: "\r\n", "\r" and "\n" each end a line.
func newLineIndex(data []byte) *lineIndex {
	li := &lineIndex{starts: []int{0}}
	for i, c := range data {
		if c == '\n' || (c == '\r' && (i+1 == len(data) || data[i+1] != '\n')) {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

// lineAt is the 1-based line of byte offset off.
func (li *lineIndex) lineAt(off int) int {
	return sort.Search(len(li.starts), func(k int) bool { return li.starts[k] > off })
}

type docSpan struct {
	ok     bool   // the framer found the document
	json   bool   // a JSON value (else a YAML document)
	start  int    // byte offset in the file where text begins
	text   []byte // the document as the decoder saw it
	errOff int    // for a JSON syntax error: its offset in the file, else -1
}

type framer struct {
	data      []byte
	inJSON    bool
	jdec      *json.Decoder
	count     int // values decoded, as YAMLOrJSONDecoder counts them
	consumed  int // offset up to which the stream has been consumed
	yamlBase  int
	yamlSrc   *bytes.Reader
	yamlBuf   *bufio.Reader
	yamlRead  *yaml.YAMLReader
	yamlBegun bool
}

func newFramer(data []byte) *framer {
	f := &framer{data: data}
	peek := data
	if len(peek) > 4096 {
		peek = peek[:4096]
	}
	if yaml.IsJSONBuffer(peek) {
		f.inJSON = true
		f.jdec = json.NewDecoder(bytes.NewReader(data))
	}
	return f
}

// next frames the document the decoder has just read (decoded tells whether it
// succeeded). It mirrors YAMLOrJSONDecoder.Decode's switch from JSON to YAML.
func (f *framer) next(decoded bool) (docSpan, error) {
	if f.inJSON {
		var raw json.RawMessage
		before := f.consumed
		err := f.jdec.Decode(&raw)
		if err == nil {
			f.count++
			end := int(f.jdec.InputOffset())
			start := end - len(raw)
			f.consumed = end
			return docSpan{ok: true, json: true, start: start, text: f.data[start:end], errOff: -1}, nil
		}
		errOff := -1
		var se *json.SyntaxError
		if errors.As(err, &se) {
			errOff = int(se.Offset)
		}
		f.inJSON = false
		if f.count > 1 {
			return docSpan{start: before, text: f.data[before:], errOff: errOff}, nil
		}
		// The decoder rewinds to the last value it consumed, eats whitespace up to and
		// including the first line break, and reads the rest as YAML.
		pos := before
		for pos < len(f.data) {
			r, sz := utf8.DecodeRune(f.data[pos:])
			if !unicode.IsSpace(r) {
				break
			}
			pos += sz
			if r == '\n' {
				break
			}
		}
		f.startYAML(pos)
		d, ferr := f.nextYAML()
		if !decoded {
			d.errOff = errOff // the decoder reports the JSON error when both fail
		}
		return d, ferr
	}
	if !f.yamlBegun {
		f.startYAML(0)
	}
	return f.nextYAML()
}

func (f *framer) startYAML(at int) {
	f.yamlBegun = true
	f.yamlBase = at
	f.consumed = at
	f.yamlSrc = bytes.NewReader(f.data[at:])
	f.yamlBuf = bufio.NewReader(f.yamlSrc)
	f.yamlRead = yaml.NewYAMLReader(f.yamlBuf)
}

func (f *framer) nextYAML() (docSpan, error) {
	before := f.consumed
	chunk, err := f.yamlRead.Read()
	end := f.yamlBase + (len(f.data) - f.yamlBase - f.yamlSrc.Len() - f.yamlBuf.Buffered())
	f.consumed = end
	if err != nil && err != io.EOF {
		// A bad "---" line: it is the last line read.
		ls := lineStartBefore(f.data, end)
		return docSpan{start: ls, text: f.data[ls:end], errOff: -1}, nil
	}
	if len(chunk) == 0 {
		return docSpan{start: before, errOff: -1}, fmt.Errorf("framing out of step at byte %d", before)
	}
	// The chunk is made of the last lines read, less a closing "---" line if the read
	// ended on one; ReadLine drops the "\n" (or "\r\n") of each line and the reader
	// puts back one "\n", so the chunk holds as many "\n" as it has lines.
	chunkEnd := end
	if end > before {
		ls := lineStartBefore(f.data, end)
		last := bytes.TrimSuffix(bytes.TrimSuffix(f.data[ls:end], []byte("\n")), []byte("\r"))
		if isSeparator(last) {
			chunkEnd = ls
		}
	}
	start := chunkEnd
	for n := bytes.Count(chunk, []byte("\n")); n > 0 && start > before; n-- {
		start = lineStartBefore(f.data, start)
	}
	return docSpan{ok: true, start: start, text: chunk, errOff: -1}, nil
}

// lineStartBefore is the offset of the start of the "\n"-ended line that ends at end.
func lineStartBefore(data []byte, end int) int {
	if end == 0 {
		return 0
	}
	return bytes.LastIndexByte(data[:end-1], '\n') + 1
}

// isSeparator is YAMLReader.Read's test for a line that ends a document.
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := strings.TrimSpace(string(line[3:]))
	return rest == "" || rest[0] == '#'
}

// checkInStep warns when the document the framer found is not the one the decoder
// read (the lines printed would then be wrong).
func checkInStep(arg string, chunk, raw []byte) {
	j, err := yaml.ToJSON(chunk)
	if err != nil || !bytes.Equal(bytes.TrimSpace(j), raw) {
		fmt.Fprintf(os.Stderr, "decoder: %s: warning: line framing may be out of step with the decoder\n", arg)
	}
}

var yamlErrLine = regexp.MustCompile(`\bline (\d+):`)

// errorLine is the line of a document the decoder could not read: the line of a JSON
// syntax error's offset (the decoder reports the JSON error whenever the stream began
// as JSON), the line a YAML error names (counted from the start of its document), else
// the line where the document begins.
func errorLine(err error, doc docSpan, lines *lineIndex) int {
	if doc.errOff >= 0 {
		off := doc.errOff - 1
		if off < 0 {
			off = 0
		}
		return lines.lineAt(off)
	}
	if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n > 0 {
			return lines.lineAt(doc.start) + n - 1
		}
	}
	if c := firstContent(doc.text); c >= 0 {
		return lines.lineAt(doc.start + c)
	}
	return lines.lineAt(doc.start)
}

// parseNode parses the first document of text into a node tree (nil when the node
// parser cannot: positions then fall back to the first content line).
func parseNode(text []byte) *yamlnode.Node {
	var doc yamlnode.Node
	if err := yamlnode.Unmarshal(text, &doc); err != nil || doc.Kind != yamlnode.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

// itemNode is the node of items[p0].items[p1]... in tree, or nil.
func itemNode(tree *yamlnode.Node, path []int) *yamlnode.Node {
	n := tree
	for _, i := range path {
		for n != nil && n.Kind == yamlnode.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yamlnode.MappingNode {
			return nil
		}
		var items *yamlnode.Node
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == "items" {
				items = n.Content[k+1] // the last one wins, as in the decoder
			}
		}
		for items != nil && items.Kind == yamlnode.AliasNode {
			items = items.Alias
		}
		if items == nil || items.Kind != yamlnode.SequenceNode || i >= len(items.Content) {
			return nil
		}
		n = items.Content[i]
	}
	return n
}

// firstContent is the offset in text of the first character that is not blank, a line
// break, a BOM or part of a comment; -1 if none.
func firstContent(text []byte) int {
	inComment := false
	for i, r := range string(text) {
		switch {
		case r == '\n' || r == '\r':
			inComment = false
		case inComment || r == ' ' || r == '\t' || r == '\uFEFF':
		case r == '#':
			inComment = true
		default:
			return i
		}
	}
	return -1
}

// ---------------------------------------------------------------------------------

func fillFromObject(rec *record, obj runtime.Object) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	rec.APIVersion, rec.Kind = gvk.GroupVersion().String(), gvk.Kind
	if acc, err := meta.Accessor(obj); err == nil {
		rec.Name, rec.Namespace = acc.GetName(), acc.GetNamespace()
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if body, err := json.Marshal(u.Object); err == nil {
			rec.Object = body
		}
	}
}

// fillFromJSON fills what it can for a document refused before it is decoded.
func fillFromJSON(rec *record, raw []byte) {
	var m map[string]interface{}
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	rec.APIVersion, _ = m["apiVersion"].(string)
	rec.Kind, _ = m["kind"].(string)
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		rec.Name, _ = md["name"].(string)
		rec.Namespace, _ = md["namespace"].(string)
	}
}
