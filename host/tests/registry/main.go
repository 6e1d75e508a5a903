// An OCI registry on loopback for the runner's tests, and a client that
// pushes to it, both go-containerregistry's, so that the runner's pulls are
// held to an implementation other than its own client.
//
//	registry                 serves an in-memory registry on 127.0.0.1 at a
//	                         port the kernel picks, its address on the first
//	                         line of standard output, until standard input
//	                         closes (so that a test that dies takes it along)
//	registry push REF FILE [CONFIG-TYPE LAYER-TYPE]
//	                         pushes FILE as the one layer of an artifact, as
//	                         `kwctl push` does (Kubewarden's Wasm media types
//	                         unless given), over plain HTTP; prints the
//	                         manifest's digest
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "push" {
		if err := push(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	serve()
}

func serve() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(listener.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	quiet := log.New(io.Discard, "", 0)
	log.Fatal(http.Serve(listener, registry.New(registry.Logger(quiet))))
}

func push(args []string) error {
	configType := "application/vnd.wasm.config.v1+json"
	layerType := "application/vnd.wasm.content.layer.v1+wasm"
	switch len(args) {
	case 2:
	case 4:
		configType, layerType = args[2], args[3]
	default:
		return fmt.Errorf("usage: registry push REF FILE [CONFIG-TYPE LAYER-TYPE]")
	}
	ref, err := name.ParseReference(args[0], name.Insecure)
	if err != nil {
		return err
	}
	content, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	image := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	image = mutate.ConfigMediaType(image, types.MediaType(configType))
	image, err = mutate.Append(image, mutate.Addendum{Layer: static.NewLayer(content, types.MediaType(layerType))})
	if err != nil {
		return err
	}
	if err := remote.Write(ref, image); err != nil {
		return err
	}
	digest, err := image.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest.String())
	return nil
}
