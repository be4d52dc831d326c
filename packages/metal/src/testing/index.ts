export { FakeAgent, type FakeAgentCall, type FakeAgentOptions } from './fake-agent';
export { CountingReloader, type MetalFixture, newMetalFixture } from './fixture';
