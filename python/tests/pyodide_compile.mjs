// Compiles Python files with Pyodide's CPython (WebAssembly, under Node.js): the probe tests'
// stand-in for a native interpreter of a version that is not installed.
// Usage: node pyodide_compile.mjs PYODIDE_DIR FILE...
// Prints one JSON object: {"version": "3.13.2", "errors": {FILE: "SyntaxError: ...", ...}}
// with an entry only for the files that do not compile.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [dir, ...files] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(path.join(dir, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: dir + path.sep });
const errors = {};
for (const file of files) {
  py.globals.set("source", new Uint8Array(readFileSync(file)));
  py.globals.set("name", file);
  const error = py.runPython(`
try:
    compile(bytes(source.to_py()), name, "exec")
    error = None
except SyntaxError as e:
    error = f"{type(e).__name__}: {e}"
error`);
  if (error !== undefined && error !== null) errors[file] = error;
}
const version = py.runPython("import platform; platform.python_version()");
console.log(JSON.stringify({ version, errors }));
