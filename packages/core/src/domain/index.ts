export * from './iscsi';
