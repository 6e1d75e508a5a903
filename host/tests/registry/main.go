// An OCI registry on loopback for the runner's tests, and a client that
// pushes to it, both go-containerregistry's, so that the runner's pulls are
// held to an implementation other than its own client.
//
//	registry [-tls DIR]      serves an in-memory registry on 127.0.0.1 at a
//	                         port the kernel picks, its address on the first
//	                         line of standard output, until standard input
//	                         closes (so that a test that dies takes it along);
//	                         with -tls, the same registry over HTTPS too, on a
//	                         second port and line, with a certificate for
//	                         127.0.0.1 and localhost from a CA made for the
//	                         run, whose certificate it writes to DIR/ca.pem
//	registry push REF FILE [CONFIG-TYPE LAYER-TYPE]
//	                         pushes FILE as the one layer of an artifact, as
//	                         `kwctl push` does (Kubewarden's Wasm media types
//	                         unless given), over plain HTTP; prints the
//	                         manifest's digest
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

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
	tlsDir := ""
	if len(os.Args) == 3 && os.Args[1] == "-tls" {
		tlsDir = os.Args[2]
	} else if len(os.Args) != 1 {
		log.Fatal("usage: registry [-tls DIR] | registry push REF FILE [CONFIG-TYPE LAYER-TYPE]")
	}
	serve(tlsDir)
}

func serve(tlsDir string) {
	quiet := log.New(io.Discard, "", 0)
	handler := registry.New(registry.Logger(quiet))
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(plain.Addr().String())
	if tlsDir != "" {
		config, err := authority(tlsDir)
		if err != nil {
			log.Fatal(err)
		}
		secure, err := tls.Listen("tcp", "127.0.0.1:0", config)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(secure.Addr().String())
		go func() { log.Fatal(http.Serve(secure, handler)) }()
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	log.Fatal(http.Serve(plain, handler))
}

// authority makes a CA and a certificate it signs for 127.0.0.1 and
// localhost, writes the CA's certificate to dir/ca.pem, and gives the
// server's TLS configuration.
func authority(dir string) (*tls.Config, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "policy-runner test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pemCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pemCA, 0o644); err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}},
		MinVersion:   tls.VersionTLS12,
	}, nil
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
