// Vite bundles imported stylesheets; TypeScript only needs to know the import is valid.
declare module '*.css';
