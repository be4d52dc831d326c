export { createFileExclusive, createFileExclusiveSync, replaceFileSync, resolveInside, temporaryNameFor, writeFileAtomic } from './files';
