// Bun's bundler takes the stylesheet out of the import graph into console-<hash>.css.
declare module '*.css'
