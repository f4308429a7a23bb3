#!/usr/bin/env python3
"""Build the playground page's files into C: embed_playground.py PIN OUTPUT FILE...

PIN is playground/vendor.json: the chart renderer's npm packages (vega,
vega-lite, vega-embed, vega-interpreter), each with its exact version, the
registry's sha512 integrity of its tarball, and the files to take from it
(tarball path -> the name served under /playground/).  Each tarball is
fetched at build time with `npm pack` (npm's own cache makes later builds
offline), or read from $T2S_NPM_TARBALLS/<package>-<version>.tgz when that
directory is set (builds without the registry); either way its integrity
must equal the pinned one.  A file listed in `module_to_global` is an ES
module whose only import is from vega-util and whose only export is one
name: it becomes a classic script that reads the imports from the named
global (vega re-exports vega-util) and sets the export on it, so the page
needs no import map (which its CSP would have to allow inline).
FILE... are our own files (index.html, style.css, app.js) embedded beside
them under their base names.

Writes a C file defining `const struct playground_asset playground_assets[]`
(see handlers/playground_assets.h), terminated by a zeroed entry, and
`playground_vendor_versions` ("vega 6.4.0, vega-lite 6.5.0, ...").  Nothing
is fetched at run time: the binary serves every byte of the page.
"""
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8"}
IMPORT_RX = re.compile(r"^import \{([\w\s,]+)\} from 'vega-util';\n", re.M)
EXPORT_RX = re.compile(r"^export \{ (\w+) as (\w+) \};\n", re.M)


def fetch(pkg, workdir):
    """The path of the package's tarball: from $T2S_NPM_TARBALLS or `npm pack`."""
    spec = "%s@%s" % (pkg["package"], pkg["version"])
    given = os.environ.get("T2S_NPM_TARBALLS")
    if given:
        return os.path.join(given, "%s-%s.tgz" % (pkg["package"], pkg["version"]))
    r = subprocess.run(["npm", "pack", spec, "--pack-destination", workdir, "--json", "--silent"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit("embed_playground.py: `npm pack %s` failed (the npm registry or npm's cache is needed at build "
                 "time; or set T2S_NPM_TARBALLS to a folder holding the tarballs):\n%s"
                 % (spec, (r.stderr or r.stdout)[-2000:]))
    return os.path.join(workdir, json.loads(r.stdout)[0]["filename"])


def module_to_global(text, name, glob):
    """The ES module `text` as a classic script on the global `glob` (see the module comment)."""
    imports, exports = IMPORT_RX.findall(text), EXPORT_RX.findall(text)
    body = EXPORT_RX.sub("", IMPORT_RX.sub("", text))
    body = re.sub(r"^//# sourceMappingURL=.*$", "", body, flags=re.M)
    if len(imports) != 1 or len(exports) != 1 or re.search(r"^\s*(import|export)\b", body, re.M):
        sys.exit("embed_playground.py: %s is not a module with one vega-util import and one export; "
                 "the pin in playground/vendor.json needs another way to load it" % name)
    local, exported = exports[0]
    return ("/* %s as a classic script on the %s global (scripts/embed_playground.py). */\n"
            "(function (%s) {\n\"use strict\";\nconst {%s} = %s;\n%s\n%s.%s = %s;\n})(self.%s);\n"
            % (name, glob, glob, imports[0].strip(), glob, body.strip(), glob, exported, local, glob))


def c_bytes(data):
    lines = []
    for i in range(0, len(data), 24):
        lines.append("  " + ",".join(str(b) for b in data[i:i + 24]) + ",")
    return "\n".join(lines)


def vendor_assets(pin):
    """[(served name, content type, bytes)] of every pinned package's files, integrity checked."""
    assets = []
    with tempfile.TemporaryDirectory(prefix="t2s-playground-npm-") as tmp:
        for pkg in pin["packages"]:
            tgz = fetch(pkg, tmp)
            with open(tgz, "rb") as f:
                raw = f.read()
            got = "sha512-" + base64.b64encode(hashlib.sha512(raw).digest()).decode()
            if got != pkg["integrity"]:
                sys.exit("embed_playground.py: %s has integrity %s, the pin says %s" % (tgz, got, pkg["integrity"]))
            wrap = pkg.get("module_to_global", {})
            with tarfile.open(tgz, "r:gz") as t:
                for path, served in pkg["files"].items():
                    member = t.extractfile("package/" + path)
                    if member is None:
                        sys.exit("embed_playground.py: %s has no package/%s" % (tgz, path))
                    data = member.read()
                    if path in wrap:
                        data = module_to_global(data.decode("utf-8"), path, wrap[path]).encode("utf-8")
                    assets.append((served, TYPES[os.path.splitext(served)[1]], data))
    return assets


def main():
    pin_path, out_path = sys.argv[1:3]
    own = sys.argv[3:]
    with open(pin_path, encoding="utf-8") as f:
        pin = json.load(f)
    assets = []
    for path in own:
        with open(path, "rb") as f:
            assets.append((os.path.basename(path), TYPES[os.path.splitext(path)[1]], f.read()))
    assets += vendor_assets(pin)
    versions = ", ".join("%s %s" % (p["package"], p["version"]) for p in pin["packages"])
    with open(out_path, "w") as out:
        out.write("/* Generated by scripts/embed_playground.py from %s and %s. Do not edit. */\n"
                  % (", ".join(os.path.basename(p) for p in own), versions))
        out.write('#include "handlers/playground_assets.h"\n\n')
        for i, (_name, _ctype, data) in enumerate(assets):
            out.write("static const unsigned char asset_%d[] = {\n%s\n  0\n};\n" % (i, c_bytes(data)))
        out.write("\nconst struct playground_asset playground_assets[] = {\n")
        for i, (name, ctype, data) in enumerate(assets):
            out.write('  {"%s", "%s", asset_%d, %d},\n' % (name, ctype, i, len(data)))
        out.write("  {0},\n};\n")
        out.write('const char playground_vendor_versions[] = "%s";\n' % versions)


if __name__ == "__main__":
    main()
