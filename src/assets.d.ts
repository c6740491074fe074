// Text and file imports that Bun embeds at build time.
declare module '*.sql' {
  const text: string
  export default text
}

// Imported `with { type: 'file' }`: the value is a path Bun.file() can open, inside the binary too.
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const path: string
  export default path
}
declare module 'swagger-ui-dist/swagger-ui.css' {
  const path: string
  export default path
}
