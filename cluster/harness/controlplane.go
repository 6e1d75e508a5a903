package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The users the harness acts as. The admin is kubeadm's, in system:masters;
// the controller manager starts as its own user and, with
// --use-service-account-credentials, acts as one service account a controller.
const (
	adminUser   = "kubernetes-admin"
	adminToken  = "admin-token-for-the-cluster-tests"
	cmUser      = "system:kube-controller-manager"
	cmToken     = "controller-manager-token-for-the-cluster-tests"
	serviceCIDR = "10.96.0.0/12"
)

// process is one component of the control plane, started in its own process
// group so that stopping it stops whatever it started.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func (h *harness) start(name, binary string, args ...string) (*process, error) {
	log := filepath.Join(h.work, name+".log")
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		out.Close()
	}()
	h.processes = append(h.processes, p)
	return p, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after a grace period.
func (p *process) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// exited says, without waiting, whether the process ended, and why.
func (p *process) exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// authority is the test's certificate authority: it signs the API server's
// and the webhook's serving certificates, made for this run only.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "annotations-policy cluster tests"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pemBlock("CERTIFICATE", der)}, nil
}

// serving writes a serving certificate for the names and addresses given,
// and its key, to <dir>/<name>.crt and <dir>/<name>.key.
func (a *authority) serving(dir, name string, hosts ...string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return "", "", err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return "", "", err
	}
	certFile := filepath.Join(dir, name+".crt")
	keyFile := filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pemBlock("CERTIFICATE", der), 0o600); err != nil {
		return "", "", err
	}
	if err := writeKey(keyFile, key); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pemBlock("EC PRIVATE KEY", der), 0o600)
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// kubeconfig writes a kubeconfig that reaches the API server as the user
// whose token it holds.
func (h *harness) kubeconfig(name, user, token string) (string, error) {
	path := filepath.Join(h.work, name+".kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tests
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: tests
  context: {cluster: tests, user: %s}
current-context: tests
`, h.server, h.caFile, user, token, user)
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// startControlPlane starts etcd, the API server and the controller manager
// with the flags a kubeadm cluster gives them, and waits until the API server
// is ready.
func (h *harness) startControlPlane() error {
	if err := h.startAPIServer(); err != nil {
		return err
	}
	cmConfig, err := h.kubeconfig("controller-manager", cmUser, cmToken)
	if err != nil {
		return err
	}
	_, err = h.start("kube-controller-manager", h.binary("kube-controller-manager"),
		"--kubeconfig="+cmConfig,
		"--authentication-kubeconfig="+cmConfig,
		"--authorization-kubeconfig="+cmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(h.work, "sa.key"),
		"--root-ca-file="+h.caFile,
		"--controllers="+strings.Join(controllers, ","),
	)
	return err
}

// startAPIServer starts etcd and the API server, in h.work, and waits until
// the API server is ready.
func (h *harness) startAPIServer() error {
	ca, err := newAuthority()
	if err != nil {
		return err
	}
	h.ca = ca
	h.caFile = filepath.Join(h.work, "ca.crt")
	if err := os.WriteFile(h.caFile, ca.pem, 0o600); err != nil {
		return err
	}
	apiCert, apiKey, err := ca.serving(h.work, "apiserver", "127.0.0.1", "localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.96.0.1")
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saKeyFile := filepath.Join(h.work, "sa.key")
	if err := writeKey(saKeyFile, saKey); err != nil {
		return err
	}
	tokens := filepath.Join(h.work, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf(
		"%s,%s,uid-admin,\"system:masters\"\n%s,%s,uid-controller-manager\n",
		adminToken, adminUser, cmToken, cmUser)), 0o600); err != nil {
		return err
	}

	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if _, err := h.start("etcd", h.binary("etcd"),
		"--name=tests",
		"--data-dir="+filepath.Join(h.work, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=tests="+peerURL,
		"--unsafe-no-fsync",
	); err != nil {
		return err
	}

	h.server = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	apiserver, err := h.start("kube-apiserver", h.binary("kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback address may not stand in the kubernetes Service's
		// endpoints, which nothing here reads.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", ports[2]),
		"--tls-cert-file="+apiCert,
		"--tls-private-key-file="+apiKey,
		"--client-ca-file="+h.caFile,
		"--token-auth-file="+tokens,
		// kubeadm's: the Node authorizer and RBAC; NodeRestriction on top of
		// the default admission plugins, which the API server orders itself.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saKeyFile,
		"--service-account-signing-key-file="+saKeyFile,
		"--cert-dir="+filepath.Join(h.work, "apiserver-certs"),
	)
	if err != nil {
		return err
	}
	if h.admin, err = h.kubeconfig("admin", adminUser, adminToken); err != nil {
		return err
	}
	return h.waitReady(apiserver)
}

// The controllers whose work the tests watch, and the service-account ones
// without which no Pod can be admitted (each namespace's `default` account).
var controllers = []string{
	"deployment-controller", "replicaset-controller", "daemonset-controller",
	"statefulset-controller", "job-controller", "cronjob-controller",
	"garbage-collector-controller", "replicationcontroller-controller",
	"serviceaccount-controller", "serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
}

func (h *harness) waitReady(apiserver *process) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: h.trustingTransport()}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if done, err := apiserver.exited(); done {
			return fmt.Errorf("kube-apiserver exited (%v); see %s", err, apiserver.log)
		}
		req, _ := http.NewRequest("GET", h.server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after 90 s; see %s", apiserver.log)
}
