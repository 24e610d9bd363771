#!/usr/bin/env python3
"""Converts the cartridge catalogs in this directory to the OpenAI tools layouts used by test_nlu."""
import json


def convert(src, dst, wrap=True):
    with open(src) as f:
        cat = json.load(f)
    tools = []
    for fn in cat["functions"]:
        params = {"type": "object", "properties": fn.get("parameters", {})}
        if fn.get("required"):
            params["required"] = fn["required"]
        out = {"name": fn["name"], "description": fn["description"], "parameters": params}
        tools.append({"type": "function", "function": out} if wrap else out)
    with open(dst, "w") as f:
        json.dump(tools, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    convert("toy-catalog.json", "toy-catalog.openai.json")
    convert("tv-catalog-small.json", "tv-catalog-small.openai.json")
    convert("tv-catalog.json", "tv-catalog.openai-bare.json", wrap=False)
