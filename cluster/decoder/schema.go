package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

// printSchema writes the table of field types `policy-runner check` embeds
// (manifests/src/refusals/kubernetes-fields.json): for every kind the pinned release
// serves (`served`), the Go type the API server decodes it into, and for every struct
// type reachable from those, its JSON fields and their types, read by reflection from
// the types of k8s.io/api and k8s.io/apimachinery, as encoding/json reads them (json
// tags, inlined structs, pointers followed). A type expression is one of:
//
//	string boolean int32 int64 uint64 number     a JSON scalar (integers by their range)
//	[]T                                          a list of T
//	{}T                                          a map from strings to T
//	quantity                                     resource.Quantity: a string or a number
//	int-or-string                                intstr.IntOrString
//	time                                         metav1.Time, metav1.MicroTime: a string
//	bytes                                        []byte: a base64 string
//	any                                          anything (RawExtension, FieldsV1, interface{})
//	GROUP/VERSION.Name                           a struct of the table
//
// null is taken everywhere, as encoding/json takes it.
func printSchema(w io.Writer) error {
	types := map[string]map[string]string{}
	kinds := map[string]string{}
	for gv, names := range served {
		for kind := range names {
			gvk := gv.WithKind(kind)
			obj, err := scheme.Scheme.New(gvk)
			if err != nil {
				return err
			}
			kinds[gv.String()+"/"+kind] = typeExpr(reflect.TypeOf(obj), types)
		}
	}
	out, err := json.MarshalIndent(struct {
		Kinds map[string]string            `json:"kinds"`
		Types map[string]map[string]string `json:"types"`
	}{kinds, types}, "", " ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(metav1.Time{})
	microTimeType   = reflect.TypeOf(metav1.MicroTime{})
	durationType    = reflect.TypeOf(metav1.Duration{})
	rawType         = reflect.TypeOf(runtime.RawExtension{})
	fieldsType      = reflect.TypeOf(metav1.FieldsV1{})
	unmarshaler     = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// typeExpr is the expression of t, adding the structs it reaches to types.
func typeExpr(t reflect.Type, types map[string]map[string]string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case quantityType:
		return "quantity"
	case intOrStringType:
		return "int-or-string"
	case timeType, microTimeType:
		return "time"
	case durationType:
		return "string"
	case rawType, fieldsType:
		return "any"
	}
	if t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(unmarshaler) {
		// A type that reads its own JSON and is none of the above: taken whole,
		// and said, so that the table shows what it does not check.
		return "any"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return "int32"
	case reflect.Int, reflect.Int64:
		return "int64"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint, reflect.Uint64:
		return "uint64"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Interface:
		return "any"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + typeExpr(t.Elem(), types)
	case reflect.Map:
		return "{}" + typeExpr(t.Elem(), types)
	case reflect.Struct:
		name := structName(t)
		if _, seen := types[name]; !seen {
			fields := map[string]string{}
			types[name] = fields
			addFields(t, fields, types)
		}
		return name
	}
	return "any"
}

// addFields adds the JSON fields of struct t, inlined structs included.
func addFields(t reflect.Type, fields map[string]string, types map[string]map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, options, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+options+",", ",inline,") || (f.Anonymous && name == "")
		if inline {
			inner := f.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				addFields(inner, fields, types)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = typeExpr(f.Type, types)
	}
}

// structName is `apps/v1.DeploymentSpec` for k8s.io/api/apps/v1.DeploymentSpec.
func structName(t reflect.Type) string {
	path := t.PkgPath()
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/", "k8s.io/apimachinery/pkg/"} {
		path = strings.TrimPrefix(path, prefix)
	}
	return path + "." + t.Name()
}
