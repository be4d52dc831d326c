// A whole ironlens-like process serving only the bootstrap API, for the restart test:
//   node --import tsx serve-bootstrap.ts <store file> <data dir> <address> <port>
// Settings come from the environment (IRONLENS_GITHUB_MIRROR…); IRONLENS_DATABASE_URL puts the
// store in PostgreSQL instead of the file.
import { createHttpApp, jobsMigrations, Store } from '@ironlens/core';
import { type BootstrapDatabase, bootstrapMigrations, bootstrapPlugin, createBootstrapServices } from '../index';

const [file, dataDir, address, port] = process.argv.slice(2);
const url = process.env.IRONLENS_DATABASE_URL;
const store = await Store.open<BootstrapDatabase>({ ...(url ? { url } : { file }), migrations: [...jobsMigrations, ...bootstrapMigrations] });
const runtime = await createBootstrapServices({ store, env: process.env, dataDir });
const app = await createHttpApp({ title: 'bootstrap', docs: false });
await app.register(bootstrapPlugin, { services: runtime.services });
await app.listen({ host: address, port: Number(port) });
process.stdout.write('listening\n');
