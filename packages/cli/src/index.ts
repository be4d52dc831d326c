export { COMMAND_USAGE, main, parseArgs } from './main';
export { ALL_MIGRATIONS, dataDirFrom, openStore, type Running, serve } from './serve';
