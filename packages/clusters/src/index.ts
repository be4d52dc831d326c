// The cluster manager (seed 000): cluster registration and llm-d preparation (this folder)
// and the Kubespray bootstrap over SSH (./bootstrap).
export * from './bootstrap';
