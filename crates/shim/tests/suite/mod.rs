mod agent_lifetime;
mod common;
mod fail_open;
mod injection;
mod lifecycle;
mod passthrough;
mod sdk_host;
