export * from './iscsi';
export * from '../schema/text';
