mod arguments;
mod caller;
mod cli;
mod python;
mod real_agents;
mod reload;
mod stdio;
mod support;
