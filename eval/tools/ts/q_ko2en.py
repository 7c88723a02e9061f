# ruff: noqa: E501  (Korean queries are written one per line; Hangul counts double width)
"""tune_ko2en_ts: Korean queries over the English TypeScript handbook pages (set A), written by hand.

Each query was written from reading ONE target passage (relevance 2) before any retrieval system saw the set (two
annotators, each over half of the passages: ts-en-0000…0124, ts-en-0125…0249); relevance-1 passages were found by
regex-grepping the whole corpus for the query's key English terms and reading the hits.
Entries: (text, kind, relevance-2 passage, relevance-1 passages) with passage numbers NNNN of ts-en-NNNN.
kind: term = keyword query (Korean terms, transliterations, identifiers), question = how-to / natural question,
paraphrase = the situation described in other words, avoiding the passage's own terms.
"""

Q = [
    # Narrowing
    ("typeof로 object인지 확인했는데 왜 null이 안 걸러지나요?", "question", "0004", "0003 0005"),
    ("falsy 값 목록 0 NaN 0n 빈 문자열 / !! 이중 부정 vs Boolean() 추론 타입 차이", "term", "0005", ""),
    ("in 연산자 타입 좁히기 옵셔널 프로퍼티 있으면 양쪽 분기 모두 포함", "term", "0010", ""),
    ("let 변수에 숫자 넣고 다시 문자열 대입은 되는데 boolean 넣으면 왜 에러가 나요?", "question", "0012", ""),
    ("사용자 정의 타입 가드 반환 타입 pet is Fish 타입 서술어", "term", "0014", "0015 0087"),
    ("도형 타입에 반지름이랑 한 변 길이를 둘 다 있어도 되고 없어도 되게 선언했더니, 원인지 확인한 뒤에도 반지름이 없을 수 있다고 계속 경고가 뜸",
     "paraphrase", "0018", "0017 0019"),
    ("판별 유니언 kind 공통 리터럴 프로퍼티로 switch 분기 좁히기", "term", "0020", "0019 0243"),
    ("never 타입 exhaustiveness 체크 switch default 누락 케이스 검출", "term", "0021", ""),
    # Object Types
    ("읽기 전용으로 선언한 변수인데 같은 객체를 가리키는 다른 변수로 수정하니 값이 같이 바뀌어 버림", "paraphrase", "0027", "0026"),
    ("인덱스 시그니처 number 인덱서와 string 인덱서 같이 쓸 때 반환 타입 서브타입 규칙", "term", "0029", ""),
    ("초과 프로퍼티 검사 excess property checking 객체 리터럴 우회 타입 단언 인덱스 시그니처", "term", "0032", "0031 0033"),
    ("객체 리터럴을 변수에 먼저 담았다가 함수에 넘기면 왜 초과 속성 에러가 안 나요?", "question", "0033", "0032 0236"),
    ("담을 값 종류마다 상자 인터페이스랑 함수 오버로드를 하나씩 따로 만들다 보니 거의 똑같은 코드가 계속 늘어남", "paraphrase", "0041", "0040 0042"),
    ("튜플 옵셔널 요소 ? 와 rest 요소 [string, number, ...boolean[]] length", "term", "0050", "0049 0051"),
    ("as const로 만든 배열을 [number, number] 매개변수에 넘기면 왜 타입 에러가 나나요?", "question", "0053", "0047"),
    # Classes
    ("strictPropertyInitialization 에러 생성자 밖에서 초기화 definite assignment 단언 name!: string", "term", "0056", "0055"),
    ("implements로 인터페이스 구현했는데 메서드 매개변수 타입이 왜 추론 안 되고 any인가요?", "question", "0063", ""),
    ("부모 생성자에서 this.name을 찍는데 자식 클래스에서 다른 값으로 초기화해도 부모 쪽 값이 출력됨", "paraphrase", "0067", "0066"),
    ("Error를 상속한 커스텀 에러 클래스에서 instanceof가 false고 메서드가 undefined로 나와요", "question", "0068", "0069"),
    ("TS private 키워드 vs JS # 프라이빗 필드 차이 soft private 대괄호 접근", "term", "0075", "0074 0076"),
    ("클래스 메서드를 변수로 떼어 내서 콜백으로 넘기면 안에서 자기 자신을 가리키는 값이 엉뚱하게 바뀌어 깨짐", "paraphrase", "0084", "0083 0085"),
    ("파라미터 프로퍼티 constructor(private readonly x) 필드 자동 선언 접근 제어자", "term", "0089", ""),
    ("추상 클래스를 상속한 구체 클래스 생성자만 인자로 받으려면 타입을 어떻게 써야 하나요?", "question", "0093", "0092"),
    ("상속 관계가 전혀 없는 두 클래스인데 멤버 구성이 같으면 서로 바꿔 넣어도 컴파일이 통과함", "paraphrase", "0094", "0236"),
    # Conditional Types
    ("infer 키워드 조건부 타입에서 배열 요소 타입 추출 Flatten", "term", "0100", "0099 0101"),
    ("오버로드된 함수에 ReturnType을 쓰면 어느 시그니처 기준으로 추론되나요?", "question", "0101", "0126"),
    ("분배 조건부 타입 유니언 분배 막기 [Type] extends [any]", "term", "0102", ""),
    # Mapped Types
    ("매핑 수정자 -readonly -? 맵드 타입에서 readonly 옵셔널 제거", "term", "0104", "0116"),
    ("맵드 타입 키 리매핑 as 절 Capitalize 로 getter 메서드 이름 생성", "term", "0105", ""),
    # Template Literal Types
    ("on(\"firstNameChanged\")처럼 이벤트 이름에서 속성명을 추론해 콜백 인자 타입을 자동으로 맞추려면?", "question", "0111", "0110"),
    # Utility Types
    ("Awaited 유틸리티 타입 중첩 Promise 재귀 언래핑", "term", "0114", ""),
    ("인터페이스에서 속성 몇 개만 빼고 나머지로 새 타입을 만들려면 어떻게 하나요?", "question", "0120", "0119 0105"),
    ("Exclude 유틸리티 타입으로 판별 유니언에서 특정 kind 멤버 제외", "term", "0121", ""),
    # Utility Types
    ("ConstructorParameters 클래스 생성자 매개변수 타입 튜플로 뽑기", "term", "0125", ""),
    ("함수가 리턴하는 값의 타입만 따로 꺼내서 다른 곳에 재사용하려면 어떻게 하나요?", "question", "0126", "0101"),
    ("NoInfer 유틸리티 타입 제네릭 기본값 인자 추론 후보에서 제외", "term", "0128", ""),
    ("객체 리터럴로 넘긴 메서드 안에서 this.x처럼 같은 설정 객체의 데이터 필드에 타입 안전하게 접근하고 싶어요", "paraphrase", "0131", "0132"),
    # Decorators
    ("experimentalDecorators tsconfig 데코레이터 활성화 컴파일러 옵션", "term", "0135", "0151"),
    ("한 선언에 데코레이터 여러 개를 겹쳐 붙이면 평가 순서와 호출 순서가 어떻게 되나요?", "question", "0138", ""),
    ("get 접근자와 set 접근자 양쪽에 각각 데코레이터를 달면 왜 에러가 나요?", "question", "0144", ""),
    ("클래스 필드 선언 앞에 @로 포맷 문자열 같은 부가 정보를 붙여 두고 나중에 메서드에서 그 값을 읽어 쓰고 싶어요", "paraphrase", "0147", "0146"),
    ("emitDecoratorMetadata design:type Reflect.getMetadata setter 런타임 타입 검증", "term", "0152", "0151 0153"),
    # Enums
    ("문자열 열거형도 값으로 멤버 이름을 거꾸로 찾는 역매핑이 되나요?", "question", "0165", ""),
    ("이넘 키 이름들을 문자열 유니온 타입으로 keyof typeof enum", "term", "0164", ""),
    ("const enum이 들어간 .d.ts를 배포하면 isolatedModules 쓰는 쪽에서 왜 문제가 되나요?", "question", "0168", "0167 0170"),
    ("TS 전용 문법 없이 평범한 JS 객체로 이름 붙은 상수 묶음을 만들고 그 값들만 인자로 받게 하고 싶어요", "paraphrase", "0172", ""),
    # Declaration Merging
    ("같은 이름 인터페이스 두 번 선언 병합 프로퍼티 타입 다르면 에러", "term", "0175", "0038"),
    ("declare module 모듈 보강 import한 클래스 prototype에 추가한 메서드 타입 선언", "term", "0182", "0183"),
    ("함수를 만든 뒤 그 함수 객체에 설정값 속성을 덧붙여 쓰는 JS 관례를 타입 오류 없이 표현하려면", "paraphrase", "0180", "0179"),
    # Project References
    ("tsconfig references path 프로젝트 레퍼런스 참조 시 .d.ts 출력 사용", "term", "0188", ""),
    ("composite 플래그 켜면 rootDir 기본값 declaration 필수 include 누락 파일", "term", "0189", ""),
    ("tsc -b --clean --dry --force --verbose 빌드 모드 플래그", "term", "0193", ""),
    ("하위 폴더마다 설정 파일을 둔 저장소에서 명령 한 번으로 전부 빌드되게 최상위 설정을 어떻게 두는 게 좋을까", "paraphrase", "0196", "0192 0197"),
    ("tsc --build로 빌드하면 타입 에러가 있을 때 왜 JS 출력이 안 생기나요?", "question", "0194", ""),
    # Do's and Don'ts
    ("결과를 쓰지 않는 콜백의 반환 타입은 any 말고 void로 써야 하는 이유가 뭔가요?", "question", "0202", ""),
    ("함수 오버로드 선언 순서 구체적인 시그니처 먼저 unknown 같은 일반 시그니처는 뒤에", "term", "0205", ""),
    ("String Number Boolean 래퍼 타입 vs 소문자 string number 타입 표기", "term", "0199", "0234"),
    # Mixins
    ("믹스인 클래스 표현식 패턴 TBase extends Constructor 베이스 클래스 확장 함수", "term", "0211", "0210"),
    ("특정 메서드를 가진 베이스 클래스에만 적용할 수 있게 믹스인에 제약을 걸려면 어떻게 하나요?", "question", "0212", ""),
    # DOM Manipulation
    ("document.getElementById 반환 타입에 왜 null이 붙어 있나요?", "question", "0219", "0224"),
    ("document.createElement 태그 이름으로 HTMLAnchorElement 반환 타입 추론 HTMLElementTagNameMap", "term", "0222", "0221"),
    ("children vs childNodes 차이 HTMLCollection NodeList 텍스트 노드 포함", "term", "0225", "0226"),
    # TypeScript for Functional Programmers
    ("let 변수에 문자열을 담아 넘겼더니 'left' | 'right'만 허용하는 매개변수에 못 넣는다고 에러가 나요", "paraphrase", "0239", ""),
    ("하스켈 newtype 대응 브랜드 타입 string & { __brand } 태그 교차 타입", "term", "0242", ""),
    ("타입스크립트에서 T<U>처럼 타입 생성자를 인자로 받는 고차 카인드 타입을 쓸 수 있나요?", "question", "0246", ""),
    ("const 배열 push 막기 readonly number[] ReadonlyArray as const 불변성", "term", "0248", "0046 0047 0053"),
]
