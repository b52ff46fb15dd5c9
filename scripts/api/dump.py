#!/usr/bin/env python3
"""Prints the public API of artcache's library modules, one symbol a line.

    python3 scripts/api/dump.py SYMBOLGRAPH_DIR > api/public-api.txt

Reads the symbol graphs `swift package dump-symbol-graph` writes (public
symbols only; `@_spi(Benchmarks)` declarations are left out, they are not
API). Each line: module, kind, path, declaration (as the compiler prints
it). Sorted, so the file diffs cleanly. The last lines count the public
types (structs, classes, enums, protocols and actors, nested ones
included; typealiases not) of the embedding API: `ArtCache` and the stage
modules it re-exports.
"""
import json
import os
import sys

# Every library module: the embedding API (`ArtCache`, the pipeline and the modules it
# re-exports), then the server. A new target goes here, or its types go uncounted.
EMBEDDING = ["ArtCacheCore", "ArtCacheFetch", "ArtCacheStore", "ArtCacheRender", "ArtCacheResultSets",
             "ArtCacheServiceGrammar", "ArtCacheTier", "ArtCachePipeline", "ArtCache"]
MODULES = EMBEDDING + ["ArtCacheServer"]
TYPE_KINDS = {"swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.actor"}


def declaration(symbol):
    fragments = symbol.get("declarationFragments") or []
    text = "".join(f.get("spelling", "") for f in fragments)
    return " ".join(text.split())


def main():
    folder = sys.argv[1]
    lines = []
    types = {}
    for module in MODULES:
        path = os.path.join(folder, module + ".symbols.json")
        if not os.path.exists(path):
            sys.exit("missing symbol graph %s" % path)
        graph = json.load(open(path))
        # What the module declares in extensions of another module's types
        # (`ArtCache@ArtCacheServiceGrammar.symbols.json`) is its API too.
        for name in sorted(os.listdir(folder)):
            if name.startswith(module + "@") and name.endswith(".symbols.json"):
                extension = json.load(open(os.path.join(folder, name)))
                graph["symbols"] += extension["symbols"]
                graph.setdefault("relationships", []).extend(extension.get("relationships", []))
        public = {}
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open") or "spi" in symbol:
                continue
            kind = symbol["kind"]["identifier"].replace("swift.", "")
            name = ".".join(symbol["pathComponents"])
            public[symbol["identifier"]["precise"]] = name
            lines.append("%s %s %s: %s" % (module, kind, name, declaration(symbol)))
            if symbol["kind"]["identifier"] in TYPE_KINDS:
                types.setdefault(module, set()).add(name)
        # Conformances of public types (dropping `Sendable` breaks clients too).
        for relation in graph.get("relationships", []):
            if relation["kind"] != "conformsTo" or relation["source"] not in public:
                continue
            target = relation.get("targetFallback") or relation["target"]
            lines.append("%s conformance %s: %s" % (module, public[relation["source"]], target.split(".")[-1] if "." in target else target))
    for line in sorted(set(lines)):
        print(line)
    embedding = sum(len(types.get(m, ())) for m in EMBEDDING)
    print("# public types of the embedding API (%s): %d" % (", ".join(EMBEDDING), embedding))
    print("# public types of ArtCacheServer: %d" % len(types.get("ArtCacheServer", ())))


if __name__ == "__main__":
    main()
