mod agents;
mod panels;
mod tabs;
mod window;
