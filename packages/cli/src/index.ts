export { main, parseArgs } from './main';
export { ALL_MIGRATIONS, dataDirFrom, openStore, serve } from './serve';
