export { FakeAgent, type FakeAgentCall, type FakeAgentOptions } from './fake-agent';
export { FakeBmc, type FakeBmcCall, type FakeBmcFailure, FakeBmcs, fakeBmcKey } from './fake-bmc';
export { CountingReloader, type MetalFixture, newMetalFixture } from './fixture';
