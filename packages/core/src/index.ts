export * from './audit';
export * from './auth';
export * from './config';
export * from './errors';
export * from './exec';
export * from './fs';
export * from './http';
export * from './store';
