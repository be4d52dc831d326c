export { type Exec, ExecError, type ExecOptions, type ExecResult, exec } from './exec';
