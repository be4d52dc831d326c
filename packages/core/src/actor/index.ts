export { currentActor, runAsActor, SYSTEM_ACTOR } from './actor';
