// Jobs: persisted, cancellable long-running work shared by every subsystem.
export {};
