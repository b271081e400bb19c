mod caller;
mod cli;
mod python;
mod real_agents;
mod stdio;
mod support;
