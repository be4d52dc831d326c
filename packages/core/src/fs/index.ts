export { resolveInside, writeFileAtomic } from './files';
