"""test_adapters.py — `fgemma serve` with several adapters over one base (docs/SERVER.md, "Adapters"),
stdlib only, cheap: tv-mini Q8_0 as the base, two adapters from `fgemma gen-lora`, the tv catalog.

  - GET /v1/models lists the base and the adapter names;
  - a chat request with model NAME runs on NAME's adapter: its catalog state is its own (another
    X-Fgemma-Catalog-Id than the base's and the other adapter's) and its answer equals /v1/nlu's with the
    same model, which equals `fgemma call --lora FILE` (the CLI loading the base with the adapter);
  - a request without a model name whose tools are the catalog bound by --lora-catalog runs on that
    adapter (the same catalog id as with model NAME); another tool list runs on the base;
  - an unknown model name is a 404 in OpenAI's error shape (code model_not_found);
  - --snapshot-dir holds one file per (adapter, catalog): the names carry the adapter's fingerprint;
  - misuse of the options: --lora-catalog naming no adapter, a named --lora on another command.

Usage: python3 test_adapters.py FGEMMA MODELS_DIR REPO
"""
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, data, hdrs


def tools_of(catalog):
    return [{"type": "function", "function": {
        "name": f["name"], "description": f.get("description", ""),
        "parameters": {"type": "object", "properties": f.get("parameters", {}), "required": f.get("required", [])}}}
        for f in catalog["functions"]]


def main():
    fgemma, models, repo = sys.argv[1:4]
    base = os.path.join(models, "tv-mini-q8_0.gguf")
    catalog_path = os.path.join(repo, "tests", "data", "nlu", "tv-catalog.json")
    catalog = json.load(open(catalog_path, encoding="utf-8"))
    tools = tools_of(catalog)
    utt = "mach lauter"
    tmp = tempfile.mkdtemp(prefix="fgemma-serve-adapters-")
    ad = {}
    for name, seed in (("alpha", 5), ("beta", 6)):
        ad[name] = os.path.join(tmp, name + ".gguf")
        subprocess.run([fgemma, "gen-lora", "-m", base, "-o", ad[name], "--seed", str(seed), "--magnitude", "0.5"],
                       check=True, capture_output=True)
    snaps = os.path.join(tmp, "snaps")
    os.mkdir(snaps)
    proc = subprocess.Popen([fgemma, "serve", "-m", base, "--port", "0", "--threads", "1", "--snapshot-dir", snaps,
                             "--lora", "alpha=" + ad["alpha"], "--lora", "beta=%s:0.7" % ad["beta"],
                             "--lora-catalog", "alpha=" + catalog_path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            proc.kill()
            raise SystemExit("server did not start: %r %s" % (line, proc.stderr.read()))
        port = int(m.group(1))
        st, data, _ = request(port, "GET", "/v1/models")
        ids = [d["id"] for d in json.loads(data)["data"]]
        check(st == 200 and ids == ["tv-mini-q8_0", "alpha", "beta"], "/v1/models lists the base and the adapters: %s" % ids)

        def chat(model, tl=tools):
            body = {"messages": [{"role": "user", "content": utt}], "tools": tl}
            if model is not None:
                body["model"] = model
            return request(port, "POST", "/v1/chat/completions", body)

        cid, answer = {}, {}
        for model in ("alpha", "beta", None):
            st, data, h = chat(model)
            check(st == 200, "chat with model %s: %s %s" % (model, st, data[:200]))
            cid[model] = h.get("x-fgemma-catalog-id")
            msg = json.loads(data)["choices"][0]["message"]
            answer[model] = json.dumps({"c": msg.get("content"), "t": [(c["function"]["name"], c["function"]["arguments"])
                                                                      for c in msg.get("tool_calls") or []]})
            check(json.loads(data)["model"] == (model or "alpha"), "the answer names its adapter (%s)" % model)
        check(cid["alpha"] != cid["beta"], "each adapter has its own catalog state")
        check(cid[None] == cid["alpha"], "a request without a model name on the bound catalog runs on alpha")
        one = tools[:1]
        _, _, h1 = chat("tv-mini-q8_0", one)
        _, _, h2 = chat("alpha", one)
        check(h1.get("x-fgemma-catalog-id") != h2.get("x-fgemma-catalog-id"), "an unbound catalog runs on the base")
        st, data, _ = chat("gamma")
        err = json.loads(data).get("error", {})
        check(st == 404 and err.get("code") == "model_not_found" and "gamma" in err.get("message", "") and "type" in err,
              "an unknown model is a 404 model_not_found: %s %s" % (st, data[:200]))
        # /v1/nlu with the model field, against the CLI loading the base with the adapter
        st, data, _ = request(port, "POST", "/v1/nlu", {"utterance": utt, "catalog": catalog, "model": "beta"})
        served = json.loads(data) if st == 200 else {}
        cli = subprocess.run([fgemma, "call", "-m", base, "--lora", "%s:0.7" % ad["beta"], "--tools", catalog_path,
                              "--threads", "1", utt], check=True, capture_output=True, text=True).stdout
        want = json.loads(cli.strip().splitlines()[-1])
        check(st == 200 and "result" in want and served.get("result") == want.get("result") and served.get("raw") == want.get("raw"),
              "/v1/nlu with model beta equals fgemma call --lora beta: %s / %s" % (served.get("raw"), want.get("raw")))
        files = sorted(f for f in os.listdir(snaps) if f.endswith(".fgsnap"))
        fps = {f.split("-")[0] for f in files}
        check(len(fps) == 3, "--snapshot-dir: one fingerprint per model view (base, alpha, beta): %s" % files)
    finally:
        proc.terminate()
        proc.wait(30)
    r = subprocess.run([fgemma, "serve", "-m", base, "--port", "0", "--lora-catalog", "nobody=" + catalog_path],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "no adapter is named 'nobody'" in r.stderr, "--lora-catalog naming no adapter: %s" % r.stderr.strip())
    r = subprocess.run([fgemma, "call", "-m", base, "--tools", catalog_path, "--lora", "alpha=" + ad["alpha"], utt],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "named adapters are for fgemma serve" in r.stderr, "a named --lora elsewhere: %s" % r.stderr.strip())
    print("test_adapters: %d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
