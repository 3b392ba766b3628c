// Compile pure-Python wheels to Pyodide's bytecode (lite/pycompile.py), in Pyodide itself under Node.js.
//   node lite/pycompile.mjs PYODIDE_DIR IN_DIR OUT_DIR
// PYODIDE_DIR: the npm package pyodide (pyodide.mjs, pyodide.asm.wasm, python_stdlib.zip); every IN_DIR/*.whl
// is written to OUT_DIR with the same name. Run by scripts/build-lite.sh; nothing is fetched.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [pyodideDir, inDir, outDir] = process.argv.slice(2).map((p) => resolve(p));
if (!outDir) {
  console.error("usage: node lite/pycompile.mjs PYODIDE_DIR IN_DIR OUT_DIR");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + "/", stdout: console.log, stderr: console.error });
const { FS } = pyodide;
for (const [host, mount] of [[inDir, "/in"], [outDir, "/out"]]) {
  FS.mkdirTree(mount);
  FS.mount(FS.filesystems.NODEFS, { root: host }, mount);
}
const here = dirname(fileURLToPath(import.meta.url));
pyodide.runPython(readFileSync(join(here, "pycompile.py"), "utf8"));
console.log(pyodide.runPython("main('/in', '/out')"));
