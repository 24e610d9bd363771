"""test_lb.py — `fgemma serve` replicas behind a real load balancer: Debian's nginx on 127.0.0.1 in front
of three replicas that share one --snapshot-dir, with a consistent-hash upstream on the catalog key that
clients send in the X-Fgemma-Catalog header (docs/SERVER.md "Scale-out"). nginx (the binary that
scripts/setup.sh unpacks from Debian's package, --nginx) is started and stopped by this test, with a
configuration of its own in a temporary folder (never as a service).

Checks, with the official openai client (tv-mini, four catalogs):
  - every answer through nginx equals a single server's answer for the same catalog and utterance;
  - each catalog is prefilled once across all replicas: the replica a key hashes to prefills and writes
    the snapshot; requests without the header (spread by nginx over the replicas) and a replica that
    takes over a dead one's catalogs load it from the directory;
  - one replica is killed (SIGKILL) while two client threads send requests: every answer that arrives is
    right, and at most the requests in flight at the kill are lost (at most one per client thread);
  - the replica is restarted on its port and rejoins: nginx sends its catalogs back to it, and it loads
    them from the directory instead of prefilling;
  - /metrics of each replica shows its cache hits, snapshot loads, writes and prefills;
  - a damaged file in the directory is refused by a new replica (its log and /metrics), recomputed and
    replaced; the answers stay right.
Every wait is bounded; the replicas and nginx are killed at the end whatever happens.

Usage: python test_lb.py --fgemma build/fgemma --model tv-mini-q8_0.gguf --tools tv-catalog.json
       [--nginx /usr/sbin/nginx]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import openai

import test_serve as ts
from test_serve import check, tools_of

UTTERANCES = ["Ton aus", "Mach lauter", "Schalte auf ZDF um"]
HEADER = "X-Fgemma-Catalog"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def catalogs(tools):
    """four catalogs: the TV catalog with four different descriptions of its first function"""
    out = {}
    for k in range(4):
        t = json.loads(json.dumps(tools))
        t[0]["function"]["description"] += " (catalog %d)" % k
        out["tv-%d" % k] = t
    return out


class Replica:
    def __init__(self, args, port, snapdir):
        self.args, self.port, self.snapdir = args, port, snapdir
        self.start()

    def start(self):
        self.srv = ts.Server(self.args.fgemma, self.args.model, "--threads", "1", "--parallel", "1",
                             "--api-key", ts.KEY, "--snapshot-dir", self.snapdir, port=self.port)
        check(self.srv.port == self.port, "replica listens on %d, not %d" % (self.srv.port, self.port))

    def metrics(self):
        return metrics_of(self.srv)


def metrics_of(srv):
    """the catalog and snapshot counters of a server's /metrics (None: missing)"""
    names = ("fgemma_catalog_prefills_total", "fgemma_snapshot_loads_total", "fgemma_snapshot_writes_total",
             "fgemma_snapshot_refused_total", "fgemma_catalog_cache_hits_total")
    _, text, _ = srv.request("GET", "/metrics")
    vals = dict.fromkeys(names, None)
    for line in text.decode().splitlines():
        name, _, v = line.partition(" ")
        if name in vals:
            vals[name] = float(v)
    return vals


def nginx_conf(tmp, port, backends):
    servers = "\n".join("    server 127.0.0.1:%d max_fails=1 fail_timeout=2s;" % p for p in backends)
    temp = "\n".join("  %s_temp_path %s/%s;" % (k, tmp, k) for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return """worker_processes 1;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
%(temp)s
  client_max_body_size 1m;
  # the catalog key: the client's header, or else a random one (such requests spread over the replicas,
  # which load the snapshot from the shared directory instead of prefilling)
  map $http_x_fgemma_catalog $fgemma_key {
    "" $request_id;
    default $http_x_fgemma_catalog;
  }
  upstream fgemma {
    hash $fgemma_key consistent;
%(servers)s
    keepalive 8;
  }
  server {
    listen 127.0.0.1:%(port)d;
    location / {
      proxy_pass http://fgemma;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 120s;
      # an fgemma request changes nothing on the server, so a POST may be retried on another replica
      # (non_idempotent), also one a replica died in the middle of, unless bytes reached the client
      proxy_next_upstream error timeout non_idempotent;
      proxy_next_upstream_tries 3;
    }
  }
}
""" % {"tmp": tmp, "temp": temp, "servers": servers, "port": port}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fgemma", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    args = ap.parse_args()
    if not os.access(args.nginx, os.X_OK):
        raise SystemExit("test_lb: nginx not found at %s: scripts/setup.sh unpacks Debian's package under "
                         ".cache/nginx (or install it)" % args.nginx)
    t0 = time.time()
    cats = catalogs(tools_of(json.load(open(args.tools))))
    tmp = tempfile.mkdtemp(prefix="fgemma-lb-")
    snapdir = os.path.join(tmp, "snapshots")
    os.mkdir(snapdir)
    nginx = None
    replicas = []
    try:
        # the single server's answers
        one = ts.Server(args.fgemma, args.model, "--threads", "1", "--api-key", ts.KEY)
        ref = {}
        for key, tools in cats.items():
            for u in UTTERANCES:
                st, body, _ = one.request("POST", "/v1/chat/completions",
                                          {"messages": [{"role": "user", "content": u}], "tools": tools})
                check(st == 200, "single server %s %r: %s" % (key, u, body[:200]))
                ref[key, u] = json.loads(body)["choices"][0]["message"]
        one.stop()

        ports = [free_port() for _ in range(3)]
        replicas = [Replica(args, p, snapdir) for p in ports]
        lb_port = free_port()
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(nginx_conf(tmp, lb_port, ports))
        nginx = subprocess.Popen([args.nginx, "-e", os.path.join(tmp, "error.log"), "-p", tmp, "-c",
                                  os.path.join(tmp, "nginx.conf"), "-g", "daemon off;"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", lb_port), timeout=1).close()
                break
            except OSError:
                if nginx.poll() is not None:
                    raise SystemExit("nginx did not start: %s" % nginx.stderr.read().decode()[:500])
                time.sleep(0.05)
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % lb_port, api_key=ts.KEY, max_retries=0,
                               timeout=120)

        def ask(key, u, header=True):
            r = client.chat.completions.create(model="tv-mini", messages=[{"role": "user", "content": u}],
                                               tools=cats[key], extra_headers={HEADER: key} if header else None)
            return json.loads(r.choices[0].message.model_dump_json(exclude_none=True))

        def same(key, u, got):
            want = ref[key, u]
            return got.get("tool_calls") and [
                (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in got["tool_calls"]] == [
                (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in want["tool_calls"]] \
                or (not got.get("tool_calls") and not want.get("tool_calls") and got.get("content") == want.get("content"))

        def totals():
            ms = [r.metrics() for r in replicas if r.srv.alive()]
            return {k: sum(m[k] or 0 for m in ms) for k in ms[0]}

        # 1. with the catalog key: each catalog on the replica its key hashes to, prefilled there once
        for key in cats:
            for u in UTTERANCES:
                got = ask(key, u)
                check(same(key, u, got), "through nginx, %s %r: %s, single server %s" % (key, u, got, ref[key, u]))
        t = totals()
        check(t["fgemma_catalog_prefills_total"] == 4, "prefills with the key: %s" % t)
        check(t["fgemma_snapshot_writes_total"] == 4, "snapshot writes: %s" % t)
        files = sorted(f for f in os.listdir(snapdir) if f.endswith(".fgsnap"))
        check(len(files) == 4 and not [f for f in os.listdir(snapdir) if ".tmp" in f], "snapshot dir: %s" % files)
        for r in replicas:
            m = r.metrics()
            check(all(v is not None for v in m.values()), "replica %d lacks metrics: %s" % (r.port, m))
        # 2. without the key: spread over the replicas, which load the snapshots; no catalog prefilled again
        for key in cats:
            for u in UTTERANCES:
                got = ask(key, u, header=False)
                check(same(key, u, got), "without the key, %s %r: %s" % (key, u, got))
        t = totals()
        check(t["fgemma_catalog_prefills_total"] == 4, "prefills after requests without the key: %s" % t)
        check(t["fgemma_catalog_cache_hits_total"] >= 8, "cache hits: %s" % t)
        print("lb: 24 requests through nginx, per replica: %s" % [r.metrics() for r in replicas], flush=True)

        # 3. a replica killed while two clients send requests
        # the replica that holds the most catalogs (by the hash of their keys)
        victim = max(replicas, key=lambda r: r.metrics()["fgemma_catalog_prefills_total"])
        others = [r for r in replicas if r is not victim]
        prefills_before = sum(r.metrics()["fgemma_catalog_prefills_total"] for r in others)
        lost, wrong, done = [], [], [0]
        stop = threading.Event()

        def client_loop(k):
            i = 0
            while not stop.is_set() and i < 200:
                key = "tv-%d" % ((i + k) % 4)
                u = UTTERANCES[i % 3]
                i += 1
                try:
                    got = ask(key, u)
                    if not same(key, u, got):
                        wrong.append((key, u, got))
                    done[0] += 1
                except (openai.APIStatusError, openai.APIConnectionError) as e:
                    lost.append("%s %r: %s" % (key, u, e))
        threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(2)]
        for th in threads:
            th.start()
        deadline = time.time() + 30
        while done[0] < 10 and time.time() < deadline:
            time.sleep(0.01)
        victim.srv.proc.kill()
        victim.srv.proc.wait()
        n_at_kill = done[0]
        deadline = time.time() + 30
        while done[0] < n_at_kill + 20 and time.time() < deadline:
            time.sleep(0.01)
        stop.set()
        for th in threads:
            th.join(60)
        check(not wrong, "wrong answers around the kill: %s" % wrong[:3])
        check(len(lost) <= 2, "requests lost at the kill (at most the 2 in flight): %s" % lost)
        check(done[0] >= n_at_kill + 20, "the other replicas stopped answering after the kill: %d, %d" % (n_at_kill, done[0]))
        for key in cats:  # every catalog still answers, none prefilled again (the snapshots)
            check(same(key, UTTERANCES[0], ask(key, UTTERANCES[0])), "after the kill, %s" % key)
        after = [r.metrics() for r in others]
        check(sum(m["fgemma_catalog_prefills_total"] for m in after) == prefills_before,
              "catalogs prefilled again after the kill (the snapshots were there): %s" % after)
        print("lb: replica on %d killed after %d answers; %d answers in all, %d lost: %s"
              % (victim.port, n_at_kill, done[0], len(lost), lost), flush=True)

        # 4. the replica restarted on its port rejoins: its catalogs come back to it, loaded from the directory
        victim.start()
        deadline = time.time() + 30
        rejoined = False
        while time.time() < deadline and not rejoined:
            for key in cats:
                check(same(key, UTTERANCES[1], ask(key, UTTERANCES[1])), "after the restart, %s" % key)
            m = victim.metrics()
            rejoined = (m["fgemma_snapshot_loads_total"] or 0) + (m["fgemma_catalog_cache_hits_total"] or 0) > 0
            if not rejoined:
                time.sleep(0.5)  # nginx retries a failed server after fail_timeout (2 s)
        m = victim.metrics()
        check(rejoined, "the restarted replica got no requests: %s" % m)
        check(m["fgemma_catalog_prefills_total"] == 0 and m["fgemma_snapshot_loads_total"] >= 1,
              "the restarted replica prefilled instead of loading: %s" % m)
        print("lb: restarted replica: %s" % m, flush=True)

        # 5. a damaged file in the directory: a new replica refuses it (log and /metrics), recomputes the
        # catalog, answers right and replaces the file
        victim_file = sorted(os.listdir(snapdir))[0]
        path = os.path.join(snapdir, victim_file)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            f.write(b"\xff" * 64)
        fresh = ts.Server(args.fgemma, args.model, "--threads", "1", "--api-key", ts.KEY, "--snapshot-dir", snapdir)
        for key in cats:
            st, body, _ = fresh.request("POST", "/v1/chat/completions",
                                        {"messages": [{"role": "user", "content": UTTERANCES[2]}], "tools": cats[key]})
            check(st == 200 and same(key, UTTERANCES[2], json.loads(body)["choices"][0]["message"]),
                  "a new replica on the damaged directory, %s: %s" % (key, body[:200]))
        m = metrics_of(fresh)
        check(m["fgemma_snapshot_refused_total"] == 1 and m["fgemma_catalog_prefills_total"] == 1 and
              m["fgemma_snapshot_loads_total"] == 3 and m["fgemma_snapshot_writes_total"] == 1,
              "a damaged snapshot: %s" % m)
        check("refused" in fresh.stderr_text(), "the refused snapshot is not in the log: %s" % fresh.stderr_text()[-300:])
        print("lb: new replica on a directory with a damaged file: %s" % m, flush=True)
    finally:
        if nginx and nginx.poll() is None:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(10)
            except subprocess.TimeoutExpired:
                nginx.kill()
        for s in ts.SERVERS:
            if s.proc.poll() is None:
                s.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_lb: %d checks, %d failed, %.1f s" % (ts.checks, len(ts.failures), time.time() - t0), flush=True)
    return 1 if ts.failures else 0


if __name__ == "__main__":
    sys.exit(main())
