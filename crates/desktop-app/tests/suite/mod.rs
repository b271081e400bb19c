mod panels;
mod window;
