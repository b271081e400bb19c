mod desktop;
