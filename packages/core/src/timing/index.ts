// Timers: a cancellable sleep and work run on a timer that never overlaps itself.
export { Periodic } from './periodic';
export { sleep } from './sleep';
