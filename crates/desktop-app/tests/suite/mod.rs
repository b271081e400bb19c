mod panels;
mod tabs;
mod window;
