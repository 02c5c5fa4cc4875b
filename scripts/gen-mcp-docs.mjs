// gen-mcp-docs.mjs: prints docs/mcp-tools.md from the server's tools/list.
// Usage: node scripts/gen-mcp-docs.mjs [path/to/abx] > docs/mcp-tools.md
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listTools, render } from '../tests/lib/mcp-docs.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
process.stdout.write(render(await listTools(abx)));
