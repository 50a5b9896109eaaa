package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary/tributary/client/serde"
	"github.com/tributary/tributary/internal/network/securetest"
	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/internal/testkit/testenv"
)

const secureSchema = `{"type":"record","name":"Click","namespace":"t","fields":[{"name":"url","type":"string"}]}`

// newSecureRegistry runs `tributary registry --config` with HTTPS (PEM
// keystore) and basic authentication (securetest's users and grants).
func newSecureRegistry(t *testing.T) (*securetest.Fixture, *registryProcess) {
	t.Helper()
	f := securetest.New(t)
	conf := f.WriteProps(t, "registry.properties", "", map[string]string{"listeners": "https://127.0.0.1:0"})
	p := newRegistryProcess(t, "--config", conf)
	if !strings.HasPrefix(p.url, "https://127.0.0.1:") {
		t.Fatalf("registry serves %s, want https://127.0.0.1:PORT", p.url)
	}
	return f, p
}

func secureCall(t *testing.T, f *securetest.Fixture, user, method, url, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := f.HTTPClient(user, false).Do(req)
	if err != nil {
		t.Fatalf("%s %s as %q: %v", method, url, user, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func TestSecureRegistryRoles(t *testing.T) {
	f, p := newSecureRegistry(t)
	reg := fmt.Sprintf(`{"schema":%q}`, secureSchema)
	steps := []struct {
		user, method, path, body string
		status, code             int
	}{
		{"", "GET", "/subjects", "", 401, 40101},
		{"reader", "GET", "/subjects", "", 200, 0},
		{"reader", "POST", "/subjects/clicks-value/versions", reg, 403, 40301},
		{"viewer", "POST", "/subjects/clicks-value/versions", reg, 403, 40301},
		{"writer", "POST", "/subjects/clicks-value/versions", reg, 200, 0},
		{"reader", "POST", "/subjects/clicks-value", reg, 200, 0}, // lookup is a read
		{"reader", "GET", "/subjects/clicks-value/versions/1", "", 200, 0},
		{"writer", "PUT", "/config", `{"compatibility":"FULL"}`, 403, 40301},
		{"writer", "DELETE", "/subjects/clicks-value", "", 403, 40301},
		{"admin", "PUT", "/config", `{"compatibility":"FULL"}`, 200, 0},
		{"admin", "PUT", "/mode/clicks-value", `{"mode":"READWRITE"}`, 200, 0},
		{"admin", "DELETE", "/subjects/clicks-value", "", 200, 0},
		{"nobody", "GET", "/subjects", "", 403, 40301},
	}
	for _, s := range steps {
		status, body := secureCall(t, f, s.user, s.method, p.url+s.path, s.body)
		if status != s.status {
			t.Errorf("%q %s %s: HTTP %d %v, want %d", s.user, s.method, s.path, status, body, s.status)
			continue
		}
		if s.code != 0 && body["error_code"] != float64(s.code) {
			t.Errorf("%q %s %s: body %v, want error_code %d", s.user, s.method, s.path, body, s.code)
		}
	}
}

// TestSecureRegistryClients: franz-go's sr client, our serde client (from
// Confluent's client keys) and Confluent's Python client register and read
// over TLS with credentials, and are refused without the right ones.
func TestSecureRegistryClients(t *testing.T) {
	f, p := newSecureRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("franz-go sr", func(t *testing.T) {
		writer, err := sr.NewClient(sr.URLs(p.url), sr.DialTLSConfig(f.TLSConfig(false)), sr.BasicAuth("writer", securetest.Password("writer")))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := writer.CreateSchema(ctx, "sr-value", sr.Schema{Schema: secureSchema, Type: sr.TypeAvro})
		if err != nil {
			t.Fatal(err)
		}
		reader, _ := sr.NewClient(sr.URLs(p.url), sr.DialTLSConfig(f.TLSConfig(false)), sr.BasicAuth("reader", securetest.Password("reader")))
		got, err := reader.SchemaByID(ctx, ss.ID)
		if err != nil || !strings.Contains(got.Schema, "Click") {
			t.Fatalf("reader SchemaByID(%d) = %v, %v", ss.ID, got.Schema, err)
		}
		var re *sr.ResponseError
		if _, err := reader.CreateSchema(ctx, "sr2-value", sr.Schema{Schema: secureSchema}); !errors.As(err, &re) || re.ErrorCode != 40301 {
			t.Errorf("reader CreateSchema: %v, want error_code 40301", err)
		}
		if _, err := writer.DeleteSubject(ctx, "sr-value", sr.SoftDelete); !errors.As(err, &re) || re.StatusCode != 403 {
			t.Errorf("writer DeleteSubject: %v, want 403", err)
		}
		admin, _ := sr.NewClient(sr.URLs(p.url), sr.DialTLSConfig(f.TLSConfig(false)), sr.BasicAuth("admin", securetest.Password("admin")))
		if _, err := admin.DeleteSubject(ctx, "sr-value", sr.SoftDelete); err != nil {
			t.Errorf("admin DeleteSubject: %v", err)
		}
	})

	t.Run("serde", func(t *testing.T) {
		client := func(t *testing.T, info string) *serde.RegistryClient {
			props := properties.New(map[string]string{
				"schema.registry.url":                     p.url,
				"basic.auth.credentials.source":           "USER_INFO",
				"basic.auth.user.info":                    info,
				"schema.registry.ssl.truststore.location": f.CAPEM,
			})
			cfg := serde.ClientConfigFromProperties(props, "")
			if err := props.Err(); err != nil {
				t.Fatal(err)
			}
			c, err := serde.NewRegistryClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		ser := serde.NewSerializer(client(t, "writer:"+securetest.Password("writer")), serde.SerializerConfig{})
		b, err := ser.Encode(ctx, "serde-value", secureSchema, map[string]any{"url": "/a"})
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := serde.NewDeserializer(client(t, "reader:"+securetest.Password("reader"))).Decode(ctx, b)
		if err != nil || v.(map[string]any)["url"] != "/a" {
			t.Fatalf("decode as reader: %v, %v", v, err)
		}
		if _, err := client(t, "reader:"+securetest.Password("reader")).Register(ctx, "serde2-value", secureSchema); !errors.Is(err, serde.ErrAccessDenied) {
			t.Errorf("reader Register: %v, want ErrAccessDenied", err)
		}
		if _, err := client(t, "writer:wrong").SchemaByID(ctx, 1); !errors.Is(err, serde.ErrAccessDenied) {
			t.Errorf("wrong password: %v, want ErrAccessDenied", err)
		}
	})

	t.Run("confluent-kafka python", func(t *testing.T) {
		py := testenv.Python(t)
		script := `
import json, sys
from confluent_kafka.schema_registry import SchemaRegistryClient, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
url, ca, schema = sys.argv[1], sys.argv[2], sys.argv[3]
def client(info):
    return SchemaRegistryClient({"url": url, "ssl.ca.location": ca, "basic.auth.user.info": info})
w = client("writer:writer-pw")
sid = w.register_schema("py-value", Schema(schema, "AVRO"))
got = client("reader:reader-pw").get_schema(sid)
out = {"id": sid, "schema": got.schema_str, "latest": w.get_latest_version("py-value").version}
for name, info, call in [("anonymous", "x:y", lambda c: c.get_subjects()),
                         ("reader_register", "reader:reader-pw", lambda c: c.register_schema("py2-value", Schema(schema, "AVRO")))]:
    try:
        call(client(info))
        out[name] = "allowed"
    except SchemaRegistryError as e:
        out[name] = e.error_code
# A compatibility check against a subject that does not exist: Confluent
# 7.x answers compatible for latest and for all versions, 40402 for a
# numbered version.
r = client("reader:reader-pw")
new = Schema(schema, "AVRO")
out["compat_missing"] = [r.test_compatibility("nosuch-value", new),
                         r.test_compatibility("nosuch-value", new, verbose=True),
                         r.test_compatibility_all_versions("nosuch-value", new)]
try:
    r.test_compatibility("nosuch-value", new, version=1)
    out["compat_missing_v1"] = "compatible"
except SchemaRegistryError as e:
    out["compat_missing_v1"] = [e.http_status_code, e.error_code, e.error_message]
print(json.dumps(out))
`
		cmd := exec.CommandContext(ctx, py, "-c", script, p.url, f.CAPEM, secureSchema)
		raw, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("python: %v\n%s", err, ee.Stderr)
			}
			t.Fatal(err)
		}
		var out struct {
			ID             int    `json:"id"`
			Schema         string `json:"schema"`
			Latest         int    `json:"latest"`
			Anonymous      any    `json:"anonymous"`
			ReaderRegister any    `json:"reader_register"`
			CompatMissing  []bool `json:"compat_missing"`
			CompatV1       any    `json:"compat_missing_v1"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("python output %q: %v", raw, err)
		}
		if out.ID <= 0 || !strings.Contains(out.Schema, "Click") || out.Latest != 1 {
			t.Errorf("python client: %+v", out)
		}
		if out.Anonymous != float64(40101) || out.ReaderRegister != float64(40301) {
			t.Errorf("python client refusals: wrong credentials %v, reader registering %v; want 40101, 40301", out.Anonymous, out.ReaderRegister)
		}
		if fmt.Sprint(out.CompatMissing) != "[true true true]" {
			t.Errorf("python client test_compatibility (latest, latest verbose, all versions) on a missing subject: %v, want all true", out.CompatMissing)
		}
		if fmt.Sprint(out.CompatV1) != "[404 40402 Version 1 not found.]" {
			t.Errorf("python client test_compatibility version 1 on a missing subject: %v, want [404 40402 Version 1 not found.]", out.CompatV1)
		}
	})
}

func TestRegistryConfigRefused(t *testing.T) {
	f := securetest.New(t)
	for _, tc := range []struct {
		extra map[string]string
		want  string
	}{
		{map[string]string{"listeners": "ftp://127.0.0.1:0"}, "listeners"},
		{map[string]string{"listeners": "https://127.0.0.1:0,http://127.0.0.1:0"}, "only one listener"},
		{map[string]string{"listeners": "https://127.0.0.1:0", "ssl.keystore.location": ""}, "ssl.keystore.location"},
		{map[string]string{"authorization.roles.user": "superuser"}, "authorization.roles.user"},
	} {
		conf := f.WriteProps(t, "bad.properties", "", tc.extra)
		cmd := newRootCommand()
		cmd.SetArgs([]string{"registry", "--config", conf})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.extra, err, tc.want)
		}
	}
}
