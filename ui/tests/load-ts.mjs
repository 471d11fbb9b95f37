// Loads a pure module of src/lib in node, the way the window's bundle has it: the module and
// every module it imports by a relative path, types stripped by TypeScript's own transpiler,
// written to a temporary directory shaped like src/lib (type-only imports vanish there).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const lib = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'lib');

/** `name` of src/lib (`'delta'`, `'bindings/words'`), imported. */
export async function loadLib(name) {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'debugtop-lib-'));
  const done = new Set();
  const emit = (rel) => {
    if (done.has(rel)) return;
    done.add(rel);
    const source = fs.readFileSync(path.join(lib, `${rel}.ts`), 'utf8');
    const js = ts
      .transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } })
      .outputText.replace(/from '(\.{1,2}\/[^']+)'/g, (_, spec) => {
        emit(path.posix.join(path.posix.dirname(rel), spec));
        return `from '${spec}.mjs'`;
      });
    const file = path.join(out, `${rel}.mjs`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, js);
  };
  emit(name);
  try {
    return await import(pathToFileURL(path.join(out, `${name}.mjs`)).href);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}
