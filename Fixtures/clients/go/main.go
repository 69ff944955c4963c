// netsim exec client: Go's net/http, `--client go` (docs/drivers.md, exec protocol 1).
//
// ONE http.Client over a clone of http.DefaultTransport for the process (one connection pool),
// one goroutine per request, answers in completion order. Standard library only; built by
// Fixtures/clients/go_client.sh (and ci/setup) into .build/clients/go_client.
//
// net/http's defaults are kept (net/http/transport.go DefaultTransport: IdleConnTimeout 90 s,
// MaxIdleConns 100, MaxIdleConnsPerHost 2 (DefaultMaxIdleConnsPerHost), dialer Timeout 30 s,
// TLSHandshakeTimeout 10 s; http.Client.Timeout 0: none) and config maps by the protocol's rules:
//
//	timeout          -> http.Client.Timeout: Go's total timeout (connect, redirects, reading the body)
//	connect_timeout  -> net.Dialer.Timeout in the Transport's DialContext (null: Go's 30 s)
//	pool             -> Transport.MaxIdleConnsPerHost (idle connections kept per host)
//	retries          -> net/http has no count. Transport replays a request by itself when a
//	                    reused connection fails before any response byte and the request is
//	                    idempotent or has no body (transport.go: shouldRetryRequest, the
//	                    request's isReplayable); it cannot be switched off, so the field is logged
//
// local_port: httptrace.ClientTrace.GotConn gives the connection of every attempt, reused or
// new, so failed requests report it too.
//
// Errors, by errors.Is/errors.As on what Client.Do returns (a *url.Error wrapping the cause):
//
//	*net.DNSError                                        -> dns
//	x509.*Error, tls.RecordHeaderError, "tls: " alerts   -> tls
//	syscall.ECONNREFUSED                                 -> refused
//	net.Error with Timeout() (Client.Timeout, dial)      -> timeout
//	io.EOF before the response head                      -> closed-before-response
//	syscall.ECONNRESET, syscall.EPIPE                    -> reset
//	io.ErrUnexpectedEOF reading the body, a malformed response -> other
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

type config struct {
	Type           string   `json:"type"`
	Timeout        *float64 `json:"timeout"`
	ConnectTimeout *float64 `json:"connect_timeout"`
	Pool           *int     `json:"pool"`
	Retries        *int     `json:"retries"`
}

type request struct {
	Type    string            `json:"type"`
	ID      *int64            `json:"id"`
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

type answerError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type answer struct {
	ID         *int64            `json:"id"`
	Status     *int              `json:"status"`
	Headers    map[string]string `json:"headers"`
	BodySHA256 *string           `json:"body_sha256"`
	BodyLength *int              `json:"body_length"`
	Body       *string           `json:"body"`
	Error      *answerError      `json:"error"`
	LocalPort  *int              `json:"local_port"`
	Elapsed    float64           `json:"elapsed"`
}

var (
	outLock sync.Mutex
	out     = bufio.NewWriter(os.Stdout)
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "go_client: "+format+"\n", args...) }

func emit(value any) {
	line, _ := json.Marshal(value)
	outLock.Lock()
	defer outLock.Unlock()
	out.Write(append(line, '\n'))
	out.Flush()
}

func makeClient(c config) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.ConnectTimeout != nil {
		// Go's DefaultTransport dialer, with the connect timeout replaced.
		dialer := &net.Dialer{Timeout: seconds(*c.ConnectTimeout), KeepAlive: 30 * time.Second}
		transport.DialContext = dialer.DialContext
	}
	if c.Pool != nil {
		transport.MaxIdleConnsPerHost = *c.Pool
	}
	if c.Retries != nil {
		logf("retries=%d: net/http has no retry count; its replay of idempotent requests on a dead reused connection stays", *c.Retries)
	}
	client := &http.Client{Transport: transport}
	if c.Timeout != nil {
		client.Timeout = seconds(*c.Timeout)
	}
	// Redirects: Go's default policy (follow up to 10). SSL_CERT_FILE names netsim's CA (crypto/x509 reads it).
	logf("Client{Timeout: %v}, Transport{MaxIdleConnsPerHost: %d (0: http.DefaultMaxIdleConnsPerHost = %d), IdleConnTimeout: %v}",
		client.Timeout, transport.MaxIdleConnsPerHost, http.DefaultMaxIdleConnsPerHost, transport.IdleConnTimeout)
	return client
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func errorKind(err error, answered bool) string {
	var dnsErr *net.DNSError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr), errors.As(err, &invalidErr),
		errors.As(err, &recordErr), strings.Contains(err.Error(), "tls: "):
		return "tls"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case !answered && errors.Is(err, io.EOF):
		return "closed-before-response"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	}
	return "other"
}

func perform(client *http.Client, r request) answer {
	a := answer{ID: r.ID, Headers: map[string]string{}}
	var portLock sync.Mutex
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if addr, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
			portLock.Lock()
			port := addr.Port
			a.LocalPort = &port
			portLock.Unlock()
		}
	}}
	var body io.Reader
	if r.Body != nil {
		body = strings.NewReader(*r.Body)
	}
	method := r.Method
	if method == "" {
		method = "GET"
	}
	answered := false
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), method, r.URL, body)
	var data []byte
	var resp *http.Response
	if err == nil {
		for name, value := range r.Headers {
			req.Header.Set(name, value)
		}
		resp, err = client.Do(req)
	}
	if err == nil {
		answered = true
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	portLock.Lock()
	defer portLock.Unlock()
	if err != nil {
		a.Error = &answerError{Kind: errorKind(err, answered), Message: err.Error()}
		logf("request %v failed: %s: %v", *r.ID, a.Error.Kind, err)
		return a
	}
	status, length := resp.StatusCode, len(data)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	text := utf8Text(data)
	a.Status, a.BodyLength, a.BodySHA256, a.Body = &status, &length, &digest, &text
	// net/http moves Transfer-Encoding out of Header; it was sent, so it is reported.
	if len(resp.TransferEncoding) > 0 {
		a.Headers["transfer-encoding"] = strings.Join(resp.TransferEncoding, ", ")
	}
	for name, values := range resp.Header {
		a.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	return a
}

// utf8Text is the body's first 65536 bytes as text, invalid bytes replaced by U+FFFD.
func utf8Text(data []byte) string {
	if len(data) > 65536 {
		data = data[:65536]
	}
	return strings.ToValidUTF8(string(data), string(utf8.RuneError))
}

func main() {
	in := bufio.NewReader(os.Stdin)
	var c config
	line, _ := in.ReadBytes('\n')
	if err := json.Unmarshal(line, &c); err != nil || c.Type != "config" {
		logf("first line is not a config: using net/http's defaults")
		c = config{}
	}
	client := makeClient(c) // built before hello: start-up is not scenario time
	emit(map[string]any{"type": "hello", "name": "go", "version": "net/http " + runtime.Version(), "protocol": 1})
	var wg sync.WaitGroup
	for {
		line, err := in.ReadBytes('\n')
		received := time.Now()
		if len(strings.TrimSpace(string(line))) > 0 {
			var r request
			if jsonErr := json.Unmarshal(line, &r); jsonErr != nil || r.Type != "request" || r.ID == nil {
				logf("unexpected line, ignored: %q", strings.TrimSpace(string(line)))
			} else {
				wg.Add(1)
				go func(r request) {
					defer wg.Done()
					a := perform(client, r)
					a.Elapsed = time.Since(received).Seconds()
					emit(a)
				}(r)
			}
		}
		if err != nil {
			break
		}
	}
	wg.Wait()
}
