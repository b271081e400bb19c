mod caller;
mod python;
mod real_agents;
mod stdio;
mod support;
