export * from './iscsi';
export * from './text';
