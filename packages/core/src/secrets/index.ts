export * from './key-check';
export * from './secret-box';
