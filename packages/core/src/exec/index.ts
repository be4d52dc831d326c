export { type Exec, ExecError, type ExecOptions, type ExecResult, exec, processAlive } from './exec';
