#!/usr/bin/env python3
"""The target graph is what the code imports (issue 50).

    swift package dump-package | python3 -B scripts/imports/check.py

For every Swift target of the package (sources, executables, tests):
- every module a file imports is a declared dependency of its target
  (a project target or a product of a package dependency), unless it is the
  toolchain's own (Foundation, Glibc, Testing…);
- every declared dependency is imported by at least one of its files (no
  arrow in Package.swift that the code does not draw; a test target may
  depend on an executable only to run it);
- no target depends on a re-exporting module (a target with an
  `@_exported import`): such a module is for embedders (`import ArtCache`),
  and depending on it would hide who uses what;
- a target kept light (LIGHT) reaches none of the heavy modules named for
  it, directly or through its dependencies (issue 58: a front that only
  signs URLs links no libvips, libheif or libcurl).
Prints each violation as `Target: …` and exits 1 if there is any.
"""
import json
import os
import re
import sys

# The toolchain's modules: importable without a declared dependency.
TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
             "FoundationXML", "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization", "_Concurrency",
             "Testing", "XCTest", "RegexBuilder", "Observation", "os", "CoreFoundation"}
# Targets and the modules they must not reach, even transitively.
LIGHT = {"ArtCacheServiceGrammar": {"ArtCacheRender", "ArtCacheFetch", "CVipsShim", "CVipsSystem", "CCurlShim", "CCurlSystem",
                                    "CHeif", "CHeifAOM", "CTurboJPEG", "CWebP"}}
# A product whose module has another name, or which has several modules.
PRODUCT_MODULES = {}

IMPORT = re.compile(r'^\s*(?:@[\w]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?'
                    r'import\s+(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?([A-Za-z_][A-Za-z0-9_]*)')
EXPORTED = re.compile(r'^\s*@_exported\s+import\s')


def target_folder(target):
    if target.get("path"):
        return target["path"]
    return os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])


def swift_files(folder):
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.endswith(".docc")]
        for name in sorted(filenames):
            if name.endswith(".swift"):
                yield os.path.join(dirpath, name)


def imports_of(path):
    found, exported = set(), False
    in_block = False
    for line in open(path, encoding="utf-8"):
        # Block comments: skip their lines (a doc's example `import ArtCache`).
        if in_block:
            in_block = "*/" not in line
            continue
        if line.lstrip().startswith("/*"):
            in_block = "*/" not in line
            continue
        match = IMPORT.match(line)
        if match:
            found.add(match.group(1))
            exported = exported or bool(EXPORTED.match(line))
    return found, exported


def main():
    package = json.load(sys.stdin)
    targets = {t["name"]: t for t in package["targets"]}
    declared, files, imported, reexporting = {}, {}, {}, set()
    for name, target in targets.items():
        if target["type"] in ("system", "binary", "plugin", "macro"):
            continue
        deps = set()
        for dep in target["dependencies"]:
            kind, value = next(iter(dep.items()))
            if kind in ("byName", "target"):
                deps.add(value[0])
            elif kind == "product":
                deps.update(PRODUCT_MODULES.get(value[0], [value[0]]))
        declared[name] = deps
        files[name] = list(swift_files(target_folder(target)))
        imported[name] = {}
        for path in files[name]:
            modules, exported = imports_of(path)
            if exported:
                reexporting.add(name)
            for module in modules:
                imported[name].setdefault(module, path)
    problems = []
    for name in sorted(declared):
        if not files[name]:
            continue  # a C target: its includes are its business
        for module, path in sorted(imported[name].items()):
            if module in TOOLCHAIN or module == name:
                continue
            if module not in declared[name]:
                problems.append("%s: %s imports %s, which is not a declared dependency" % (name, path, module))
        for module in sorted(declared[name]):
            # (A test may depend on an executable only to have it built and run it.)
            runs_it = targets[name]["type"] == "test" and targets.get(module, {}).get("type") == "executable"
            if module not in imported[name] and name not in reexporting and not runs_it:
                problems.append("%s: declares %s but no file of it imports it" % (name, module))
            if module in reexporting:
                problems.append("%s: depends on %s, which re-exports other modules (for embedders only)"
                                % (name, module))
    for name, heavy in sorted(LIGHT.items()):
        reached, stack = set(), [name]
        while stack:
            for dep in declared.get(stack.pop(), set()):
                if dep not in reached:
                    reached.add(dep)
                    stack.append(dep)
        for module in sorted(reached & heavy):
            problems.append("%s: reaches %s, which it must not link" % (name, module))
    for line in problems:
        print(line)
    swift_targets = [n for n in declared if files[n]]
    if problems:
        print("imports: %d problem(s) in %d Swift targets" % (len(problems), len(swift_targets)), file=sys.stderr)
        sys.exit(1)
    print("imports: %d Swift targets; every import is a declared dependency and every dependency is imported;"
          " no target depends on a re-exporting module (%s); %s reach no codec or libcurl"
          % (len(swift_targets), ", ".join(sorted(reexporting)) or "none", ", ".join(sorted(LIGHT))))


if __name__ == "__main__":
    main()
